package web

import "github.com/my-agent-crew/crew/tools"

// FetchTool and SearchTool are f and s as Tools returns them, for the
// tests of package web_test.
func FetchTool(f FetchURL) tools.Tool   { return tools.NewFunc[fetchArgs](f) }
func SearchTool(s WebSearch) tools.Tool { return tools.NewFunc[searchArgs](s) }
