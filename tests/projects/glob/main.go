// The reference glob for the AppProject tests (tests/projects.rs): github.com/gobwas/glob,
// compiled without separators, as Argo CD's util/glob matches an AppProject's
// destinationServiceAccounts (util/settings/impersonation.go). Built from Debian's packages
// (golang-go, golang-github-gobwas-glob-dev) by the test itself.
//
// Input: JSON lines {"pattern", "text"}. Output: a JSON line each, {"match": bool}, {"error"},
// or {"panic"} where the library itself fails.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gobwas/glob"
)

type question struct {
	Pattern string `json:"pattern"`
	Text    string `json:"text"`
}

type answer struct {
	Match *bool  `json:"match,omitempty"`
	Error string `json:"error,omitempty"`
	Panic string `json:"panic,omitempty"`
}

// ask compiles and matches, and says a panic of the library as one.
func ask(q question) (a answer) {
	defer func() {
		if r := recover(); r != nil {
			a = answer{Panic: fmt.Sprint(r)}
		}
	}()
	g, err := glob.Compile(q.Pattern)
	if err != nil {
		return answer{Error: err.Error()}
	}
	matched := g.Match(q.Text)
	return answer{Match: &matched}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var q question
		if err := json.Unmarshal(in.Bytes(), &q); err != nil {
			panic(err)
		}
		out.Encode(ask(q))
	}
}
