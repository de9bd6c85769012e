//go:build !race

package pdf

import "github.com/tetratelabs/wazero"

const raceEnabled = false

func runtimeConfig() wazero.RuntimeConfig { return wazero.NewRuntimeConfig() }
