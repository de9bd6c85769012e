//go:build race

package pdf

import "github.com/tetratelabs/wazero"

const raceEnabled = true

// runtimeConfig: under the race detector wazero's compiler runs
// instrumented and takes minutes on PDFium; the interpreter starts at once.
func runtimeConfig() wazero.RuntimeConfig { return wazero.NewRuntimeConfigInterpreter() }
