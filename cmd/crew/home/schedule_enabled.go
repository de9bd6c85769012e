package home

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// ErrNoSchedule is a schedule name agent.yaml does not hold.
var ErrNoSchedule = errors.New("no such schedule")

// SetScheduleEnabled writes enabled: on into the schedule named name of
// the agent.yaml in dir, changing only that one value (or adding the key
// after the schedule's name: line): comments, order and quoting of the
// rest of the file stay as they were. The file is replaced atomically.
func SetScheduleEnabled(dir, name string, on bool) error {
	path := filepath.Join(dir, "agent.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return readError(path, err)
	}
	out, err := setScheduleEnabled(data, name, on)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(out, data) {
		return nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, info.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func setScheduleEnabled(data []byte, name string, on bool) ([]byte, error) {
	f, err := parser.ParseBytes(data, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, fmt.Errorf("%w %q: the file is empty", ErrNoSchedule, name)
	}
	top, ok := mappingValues(f.Docs[0].Body)
	if !ok {
		return nil, fmt.Errorf("%w %q: the file is not a mapping", ErrNoSchedule, name)
	}
	var list *ast.SequenceNode
	for _, kv := range top {
		if kv.Key.String() == "schedules" {
			list, _ = kv.Value.(*ast.SequenceNode)
		}
	}
	if list == nil {
		return nil, fmt.Errorf("%w %q: no schedules: list", ErrNoSchedule, name)
	}
	value := "false"
	if on {
		value = "true"
	}
	lines := strings.SplitAfter(string(data), "\n")
	for _, item := range list.Values {
		kvs, ok := mappingValues(item)
		if !ok {
			continue
		}
		var nameKV, enabledKV *ast.MappingValueNode
		for _, kv := range kvs {
			switch kv.Key.String() {
			case "name":
				if s, ok := kv.Value.(*ast.StringNode); ok && s.Value == name {
					nameKV = kv
				}
			case "enabled":
				enabledKV = kv
			}
		}
		if nameKV == nil {
			continue
		}
		if enabledKV != nil {
			// Replace the value's token in its line, nothing else.
			tk := enabledKV.Value.GetToken()
			ln, col := tk.Position.Line-1, tk.Position.Column-1
			if ln < 0 || ln >= len(lines) || col < 0 || col+len(tk.Value) > len(lines[ln]) || lines[ln][col:col+len(tk.Value)] != tk.Value {
				return nil, fmt.Errorf("schedule %q: enabled: at line %d is not where the parser says", name, tk.Position.Line)
			}
			lines[ln] = lines[ln][:col] + value + lines[ln][col+len(tk.Value):]
			return []byte(strings.Join(lines, "")), nil
		}
		// Add "enabled: <v>" after the name: line, indented as name: is.
		ktk := nameKV.Key.GetToken()
		ln := nameKV.Value.GetToken().Position.Line - 1
		if ln < 0 || ln >= len(lines) {
			return nil, fmt.Errorf("schedule %q: its name: line is out of the file", name)
		}
		indent := strings.Repeat(" ", ktk.Position.Column-1)
		end := lines[ln]
		if !strings.HasSuffix(end, "\n") {
			lines[ln] = end + "\n"
		}
		add := indent + "enabled: " + value + "\n"
		lines = append(lines[:ln+1], append([]string{add}, lines[ln+1:]...)...)
		return []byte(strings.Join(lines, "")), nil
	}
	return nil, fmt.Errorf("%w %q", ErrNoSchedule, name)
}

// mappingValues are a mapping node's key-value pairs (a one-pair mapping
// parses as a lone MappingValueNode).
func mappingValues(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}
