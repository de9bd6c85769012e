package home

import "strings"

// unbuilt lists the keys the design has and this build does not act on.
// Each is refused with "not available in this build", so that a home never
// believes a setting does something. The issue that builds a key deletes
// its line here and adds the key to the schema and the struct.
var unbuilt = []struct {
	schema string // which file: the schema it is validated against
	key    string // dotted path
}{}

// refuseUnbuilt reports the first unbuilt key of the file, in file order,
// at the key's position.
func (f *yamlFile) refuseUnbuilt(schema string) error {
	var first *ConfigError
	for _, u := range unbuilt {
		if u.schema != schema {
			continue
		}
		loc := strings.Split(u.key, ".")
		parent, ok := f.val, true
		for _, seg := range loc[:len(loc)-1] {
			m, isMap := parent.(map[string]any)
			parent, ok = m[seg], isMap
		}
		m, isMap := parent.(map[string]any)
		if _, present := m[loc[len(loc)-1]]; !ok || !isMap || !present {
			continue
		}
		err := f.errAtKey(loc[:len(loc)-1], loc[len(loc)-1], u.key, u.key+": not available in this build")
		if first == nil || err.Line < first.Line || (err.Line == first.Line && err.Col < first.Col) {
			first = err
		}
	}
	if first == nil {
		return nil
	}
	return first
}
