// Command goyaml prints how go-yaml v3 — the YAML reader inside kpt and kustomize (kyaml) —
// reads a YAML stream: one JSON value per document, aliases expanded, every scalar as the text
// go-yaml holds for it, mappings as lists of [key, value] pairs in their order. On a stream
// go-yaml refuses, it prints {"error": "..."} instead. The capi2argo tests compare this with
// their own reader's reading of the same text.
//
// Built by the tests with Debian's golang-go and golang-gopkg-yaml.v3-dev, no module download:
//   GO111MODULE=off GOPATH=/usr/share/gocode go build -o goyaml main.go
package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// expanding holds the anchored nodes whose aliases are being expanded: one met again inside
// itself is a structure that contains itself, which go-yaml's decoder refuses too.
var expanding = map[*yaml.Node]bool{}

// budget bounds the nodes aliases may expand to (a billion-laughs document), as go-yaml's
// decoder bounds its own alias expansion.
var budget = 5000000

// maxDepth is capi2argo's own default limit (--max-depth): deeper documents are its documented
// departure from go-yaml (which nests to 10,000), and deeper JSON is more than the test's JSON
// reader takes.
const maxDepth = 200

func value(n *yaml.Node, depth int) (interface{}, error) {
	if depth > maxDepth {
		return nil, errors.New("nested deeper than capi2argo's --max-depth")
	}
	if budget--; budget < 0 {
		return nil, errors.New("aliases expand to too many nodes")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return value(n.Content[0], depth+1)
	case yaml.AliasNode:
		if expanding[n.Alias] {
			return nil, errors.New("alias inside the node it names")
		}
		expanding[n.Alias] = true
		defer delete(expanding, n.Alias)
		return value(n.Alias, depth+1)
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		out := []interface{}{}
		for _, c := range n.Content {
			v, err := value(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := []interface{}{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := value(n.Content[i], depth+1)
			if err != nil {
				return nil, err
			}
			v, err := value(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, []interface{}{k, v})
		}
		return map[string]interface{}{"map": out}, nil
	}
	return nil, errors.New("unknown node kind")
}

func main() {
	dec := yaml.NewDecoder(os.Stdin)
	docs := []interface{}{}
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err == nil {
			var v interface{}
			v, err = value(&n, 0)
			if err == nil {
				docs = append(docs, v)
				continue
			}
		}
		json.NewEncoder(os.Stdout).Encode(map[string]string{"error": err.Error()})
		return
	}
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"documents": docs})
}
