//go:build race

package main

// failoverMessages is smaller under the race detector, which makes both
// crew processes several times slower on CI's two cores.
const failoverMessages = 60
