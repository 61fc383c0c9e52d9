package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Expand evaluates the expression of a {{ expr }} in a user message and
// returns its value as text. It runs in a fresh VM of the frontmatter's
// sandbox (the same whitelist, rewrites and limits: Limits.Deadline, the
// memory and value bounds), whose globals are the template variables of the
// buffer's frontmatter (Result.Vars). A string, number or boolean is
// written as Lua's tostring would; nil, a table or an error is an error.
func (e *Evaluator) Expand(vars map[string]any, expr string) (out string, err error) {
	return e.ExpandContext(context.Background(), vars, expr)
}

// ErrTemplateBudget: the caller's time for templates (the press's budget,
// ExpandContext's ctx) was used up.
var ErrTemplateBudget = errors.New("the time for templates in this send is used up (send.budget.template_ms)")

// ExpandContext is Expand within ctx: the expression runs until its own
// deadline (Limits.Deadline) or ctx's, whichever comes first — a press's
// budget for all its templates travels in ctx. When ctx ends first the
// error is ErrTemplateBudget.
func (e *Evaluator) ExpandContext(parent context.Context, vars map[string]any, expr string) (string, error) {
	code := strings.TrimSpace(expr)
	if code == "" {
		return "", errors.New("empty expression")
	}
	if len(code) > MaxCodeBytes {
		return "", fmt.Errorf("expression too large (%d bytes)", len(code))
	}
	r, err := e.NewRenderer(vars, nil, math.MaxInt)
	if err != nil {
		return "", err
	}
	defer r.Close()
	outs, err := r.Render(parent, []Piece{{Kind: PieceExpr, Text: code}})
	if err != nil {
		if errors.Is(err, ErrTemplateBudget) {
			return "", ErrTemplateBudget
		}
		return "", err
	}
	if len(outs) == 0 {
		return "", nil
	}
	return outs[0].Text, nil
}

// formatScalar writes a number or a boolean as Lua's tostring would
// (integers without a fraction).
func formatScalar(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		f := float64(n)
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', 14, 64)
	}
	return v.String()
}
