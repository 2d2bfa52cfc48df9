// The reference renderer for the ApplicationSet name tests (tests/appsets.rs): Go's own
// text/template with sprig's functions, and valyala/fasttemplate, the two libraries Argo CD's
// ApplicationSet controller renders Application names with (applicationset/utils/utils.go,
// `Render.Replace`), over the parameters its cluster generator gives (applicationset/generators/
// cluster.go). Built from Debian's packages (golang-go, golang-github-masterminds-sprig-dev,
// golang-github-valyala-fasttemplate-dev) by the test itself.
//
// Input: JSON lines {"go", "options", "template", "cluster": {name, nameNormalized, server,
// project, labels, annotations}, "values"}. Output: a JSON line each, {"text"} or {"error"}.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig"
	"github.com/valyala/fasttemplate"
)

type cluster struct {
	Name           string            `json:"name"`
	NameNormalized string            `json:"nameNormalized"`
	Server         string            `json:"server"`
	Project        string            `json:"project"`
	Labels         map[string]string `json:"labels"`
	Annotations    map[string]string `json:"annotations"`
	// The local cluster: cluster.go gives it name, server and project only.
	Local bool `json:"local"`
}

type request struct {
	Go       bool              `json:"go"`
	Options  []string          `json:"options"`
	Template string            `json:"template"`
	Cluster  cluster           `json:"cluster"`
	Values   map[string]string `json:"values"`
}

type answer struct {
	Text  *string `json:"text,omitempty"`
	Error string  `json:"error,omitempty"`
}

var funcs = func() template.FuncMap {
	m := sprig.GenericFuncMap()
	// As the controller does: nothing that reads the environment.
	delete(m, "env")
	delete(m, "expandenv")
	delete(m, "getHostByName")
	return m
}()

var templated = regexp.MustCompile(".*{{.*}}.*")

func render(text string, params map[string]any, goTemplate bool, options []string) (string, error) {
	if goTemplate {
		t := template.New("name").Funcs(funcs)
		for _, o := range options {
			t = t.Option(o)
		}
		parsed, err := t.Parse(text)
		if err != nil {
			return "", err
		}
		var out bytes.Buffer
		if err := parsed.Execute(&out, params); err != nil {
			return "", err
		}
		return out.String(), nil
	}
	if !templated.MatchString(text) {
		return text, nil
	}
	t, err := fasttemplate.NewTemplate(text, "{{", "}}")
	if err != nil {
		return "", err
	}
	return t.ExecuteFuncString(func(w io.Writer, tag string) (int, error) {
		trimmed := strings.TrimSpace(tag)
		value, ok := params[trimmed].(string)
		if trimmed == "" || !ok {
			return fmt.Fprintf(w, "{{%s}}", tag)
		}
		return w.Write([]byte(value))
	}), nil
}

// The cluster generator's parameters: nested maps for Go templates, flat keys for fasttemplate
// (none for the local cluster); then each value rendered against them (a value never sees
// another value).
func params(r request) (map[string]any, error) {
	c := r.Cluster
	p := map[string]any{
		"name":           c.Name,
		"nameNormalized": c.NameNormalized,
		"server":         c.Server,
		"project":        c.Project,
	}
	if c.Local {
		// No metadata at all.
	} else if r.Go {
		meta := map[string]any{}
		if len(c.Annotations) > 0 {
			meta["annotations"] = c.Annotations
		}
		if len(c.Labels) > 0 {
			meta["labels"] = c.Labels
		}
		p["metadata"] = meta
	} else {
		for k, v := range c.Annotations {
			p["metadata.annotations."+k] = v
		}
		for k, v := range c.Labels {
			p["metadata.labels."+k] = v
		}
	}
	values := map[string]string{}
	for k, v := range r.Values {
		out, err := render(v, p, r.Go, r.Options)
		if err != nil {
			return nil, err
		}
		values[k] = out
	}
	if r.Go {
		if len(values) > 0 {
			p["values"] = values
		}
	} else {
		for k, v := range values {
			p["values."+k] = v
		}
	}
	return p, nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(2)
		}
		var a answer
		p, err := params(r)
		if err == nil {
			var text string
			text, err = render(r.Template, p, r.Go, r.Options)
			if err == nil {
				a.Text = &text
			}
		}
		if err != nil {
			a.Error = err.Error()
		}
		if err := out.Encode(a); err != nil {
			os.Exit(2)
		}
	}
}
