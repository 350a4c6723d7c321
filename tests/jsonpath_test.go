package tests

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonPath reads a dotted path ("milestones.0.status") from a JSON
// document and formats the value found: strings bare, numbers as Go prints
// float64 values, others as JSON.
func jsonPath(data []byte, path string) (string, bool) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return "", false
	}
	for _, part := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[part]
			if !ok {
				return "", false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(node) {
				return "", false
			}
			v = node[i]
		default:
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case nil:
		return "null", true
	default:
		b, _ := json.Marshal(x)
		return fmt.Sprint(string(b)), true
	}
}
