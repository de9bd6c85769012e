// Package home lays out, creates and loads the crew home directory
// ($CREW_HOME or ~/.my-agent-crew): config.yaml, the env secrets file and the
// agents (the master at the root, the others under agents/<id>/). It also
// settles the home's secrets (the audit key, the auth token, what the
// redactor learns; secrets.go), finds crew verify's key (verifykey.go) and
// makes the report lines crew doctor prints (doctor.go).
//
// Loading is strict so that bad config never loads half (R-HOME-3). Each YAML
// file goes through four gates, in this order:
//
//  1. the goccy/go-yaml parser (syntax errors),
//  2. the keys of the design this build does not act on yet (unbuilt.go:
//     "not available in this build"),
//  3. the JSON Schema in schemas/ (unknown keys, types, enums, ranges), and
//  4. a strict decode into the Go types plus the checks a schema cannot
//     express (time zone exists, cron parses, schedule names are unique, …).
//
// The schema runs before the decode because its errors carry an instance
// location we can map back to a YAML node, so every message names the key.
//
// Every failure is a *ConfigError whose Error() is one line,
// "file:line:col: message". Line and column are 1-based; when there is no
// position (a missing or unreadable file) they are 0 and the line reads
// "file: message". Only a missing or broken config.yaml or env file is fatal;
// a broken agent is recorded in Home.Problems and skipped.
//
// Init writes every file atomically and never overwrites an existing file;
// config.yaml is written last, so a half-finished init is retried by the next
// one.
package home
