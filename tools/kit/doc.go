// Package kit loads what the owner adds to an agent without code, in Claude
// Code's style: skills, named prompts (kit commands), sub-agent definitions
// and hooks.
//
// Layout. Two folders hold a kit, the home and the agent's folder:
//
//	<dir>/skills/*.md             skills (Skills, SkillsSection, SkillRead)
//	<dir>/.agents/commands/*.md   kit commands, "/name" (Commands, CommandsSection, Expand)
//	<dir>/.agents/agents/*.md     sub-agent definitions (SubAgents)
//	<dir>/.agents/hooks.json      hook commands (LoadHooks, Hooks.Run)
//
// The markdown files may start with YAML front matter between two "---"
// lines; the rest is the body. Keys kit does not know are ignored, so files
// written for Claude Code load as they are. Hidden files and anything that
// is not a regular *.md file directly in the folder are skipped.
//
// Precedence. For skills, commands and sub-agents the agent's folder
// overrides the home: an item of the agent's with the same name replaces
// the home's. Within one folder two files with the same name are an error.
// Hooks do not override: the home's run first, then the agent's. The master
// agent's folder is the home, so there the one folder is read once.
//
// Errors. Files are read anew at every call, so an edit takes effect at the
// next one. Errors name the file, and the line and column when known
// ("path:line:col: message"). A broken skill, command or sub-agent file does
// not hide the others: the loaders return what loaded along with an error
// naming every file that did not, and the caller decides whether to carry
// on. A broken hooks.json returns no hooks at all, because running without
// a guard the owner configured is worse than not running.
//
// Determinism. Everything is sorted by name, so the same files give the
// same prompt sections, byte for byte, and the provider's prompt cache
// holds.
//
// Hooks (R-LOOP-8). hooks.json has Claude Code's shape:
//
//	{"hooks": {"PreToolUse": [{"matcher": "shell_run|workspace_.*",
//	  "hooks": [{"type": "command", "command": "...", "timeout": 10}]}]}}
//
// The events are UserPromptSubmit, PreToolUse, PostToolUse and Stop. A
// matcher is a Go regular expression matched against the whole tool name;
// "" or "*" matches every tool, and it is ignored for UserPromptSubmit and
// Stop. Each command runs with /bin/sh -c, in the directory the caller
// gives (the workspace), with the event as a JSON object on stdin, in its
// own process group, which is killed when the command exits, when its
// timeout passes (default 30 s, "timeout" in seconds) or when the caller's
// context ends. Hooks are the owner's commands and are not sandboxed, but
// they get the same filtered environment as shell_run (no secrets), plus
// CREW_HOME and CREW_AGENT_DIR. Exit code 2 means block, with stderr as the
// reason: it stops the tool call (PreToolUse) or the message
// (UserPromptSubmit); for PostToolUse and Stop it is recorded, never
// blocking. Claude Code's JSON output on stdout ("decision") is not
// interpreted.
package kit
