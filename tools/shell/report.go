package shell

import "fmt"

// Report is doctor's section on shell commands and hooks: each
// protection and whether this kernel gives it (each proven by running a
// command) under the network policy n (config.yaml shell_ports and
// shell_hosts); a bad n is one line naming the setting.
func Report(n Network) []string {
	box, err := New(n)
	if err != nil {
		return []string{"shell protections: " + err.Error()}
	}
	lines := []string{"shell protections (shell_run, script jobs and hooks; Landlock and Unix-socket block when shell_network: false or shell_write_paths is set):"}
	for _, p := range box.Protections() {
		lines = append(lines, fmt.Sprintf("  %s: %s", p.Name, p.Detail))
	}
	return lines
}
