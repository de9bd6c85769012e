package home

import (
	"strconv"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// errAt reports msg at the YAML node of loc (a JSON Schema instance
// location). When loc cannot be found (aliases, odd keys) the nearest
// ancestor that can is used, and the top of the file as a last resort.
func (f *yamlFile) errAt(loc []string, key, msg string) *ConfigError {
	line, col := 1, 1
	for n := len(loc); n >= 0; n-- {
		if node := f.nodeAt(loc[:n]); node != nil {
			line, col = nodePos(node)
			break
		}
	}
	return &ConfigError{File: f.path, Line: line, Col: col, Key: key, Msg: msg}
}

// errAtKey reports msg at the key name inside the mapping at loc, for
// problems with the key itself (unknown key) rather than its value.
func (f *yamlFile) errAtKey(loc []string, name, key, msg string) *ConfigError {
	if kv := mappingEntry(f.nodeAt(loc), name); kv != nil {
		line, col := nodePos(kv.Key)
		return &ConfigError{File: f.path, Line: line, Col: col, Key: key, Msg: msg}
	}
	return f.errAt(loc, key, msg)
}

// nodeAt finds the node at loc with goccy's path API. The decoded value is
// walked alongside to tell a list index from a mapping key that looks like
// a number.
func (f *yamlFile) nodeAt(loc []string) ast.Node {
	if f.body == nil {
		return nil
	}
	b := (&yaml.PathBuilder{}).Root()
	v := f.val
	for _, seg := range loc {
		switch vv := v.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(vv) {
				return nil
			}
			b, v = b.Index(uint(i)), vv[i]
		case map[string]any:
			b, v = b.Child(seg), vv[seg]
		default:
			return nil
		}
	}
	n, err := b.Build().FilterNode(f.body)
	if err != nil {
		return nil
	}
	return n
}

// valueAt is the decoded value at loc, for messages ("got \"ten\"").
func (f *yamlFile) valueAt(loc []string) any {
	v := f.val
	for _, seg := range loc {
		switch vv := v.(type) {
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(vv) {
				return nil
			}
			v = vv[i]
		case map[string]any:
			v = vv[seg]
		default:
			return nil
		}
	}
	return v
}

func mappingEntry(n ast.Node, name string) *ast.MappingValueNode {
	var entries []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		entries = m.Values
	case *ast.MappingValueNode:
		entries = []*ast.MappingValueNode{m}
	}
	for _, kv := range entries {
		if kv.Key != nil && kv.Key.GetToken() != nil && kv.Key.GetToken().Value == name {
			return kv
		}
	}
	return nil
}

// nodePos is where a user would look for the node: the first key of a block
// mapping (goccy's mapping token is the first ':'), the opening bracket of a
// flow collection, else the node's own token.
func nodePos(n ast.Node) (line, col int) {
	switch n := n.(type) {
	case *ast.MappingNode:
		if n.IsFlowStyle && n.Start != nil {
			return tokenPos(n.Start)
		}
		if len(n.Values) > 0 {
			return nodePos(n.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return nodePos(n.Key)
	case *ast.SequenceNode:
		if n.IsFlowStyle && n.Start != nil {
			return tokenPos(n.Start)
		}
	}
	return tokenPos(n.GetToken())
}

func tokenPos(tk *token.Token) (line, col int) {
	if tk == nil || tk.Position == nil || tk.Position.Line <= 0 {
		return 1, 1
	}
	return tk.Position.Line, max(tk.Position.Column, 1)
}
