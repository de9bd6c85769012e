//go:build race

package pdf

const raceEnabled = true
