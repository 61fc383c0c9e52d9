// Command benchcheck (`make bench-check`) runs the benchmarks that have a
// budget in docs/budgets.txt and prints each figure against its budget, ✓
// or ✗ (or ? when the figure is missing, with the reason); it exits non-zero
// when any budget is not met. Timing on a shared machine is noisy: budgets
// are ratios to a reference measured in the same run wherever one exists.
//
// docs/budgets.txt, one budget per line:
//
//	<go package dir> <benchmark regex as for -bench> <metric unit> <op: <= or >=> <limit>  # <what it guards>
//
// '#' starts a comment; blank lines are ignored. Every benchmark result whose
// name the regex matches (element by element between slashes, as -bench
// does) is judged.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Budget is one line of the budgets file.
type Budget struct {
	Line   int
	Pkg    string // package directory, e.g. "e2e" or "./e2e"
	Bench  string // -bench regex
	Unit   string // metric unit as reported (ms-p50, ratio, ns/op…)
	Op     string // "<=" or ">="
	Limit  float64
	Guards string // the comment
	// Benchtime is the -benchtime of its benchmark's run ("10x", "2s"), or
	// "" for the testing package's default: each benchmark as long as its
	// figure needs, no longer (issue 23: the check was to take ~30 s).
	Benchtime string
}

var benchtimeRe = regexp.MustCompile(`^([1-9][0-9]*x|[0-9]+(\.[0-9]+)?(ms|s|m))$`)

// ParseBudgets reads a budgets file.
func ParseBudgets(r io.Reader) ([]Budget, error) {
	var out []Budget
	var errs []error
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		comment := ""
		if i := strings.Index(line, "#"); i >= 0 {
			line, comment = line[:i], strings.TrimSpace(line[i+1:])
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 && len(f) != 6 {
			errs = append(errs, fmt.Errorf("line %d: want 5 or 6 fields (package, benchmark regex, unit, op, limit[, benchtime]), got %d", n, len(f)))
			continue
		}
		benchtime := ""
		if len(f) == 6 {
			if !benchtimeRe.MatchString(f[5]) {
				errs = append(errs, fmt.Errorf("line %d: benchtime %q is neither Nx nor a duration such as 2s", n, f[5]))
				continue
			}
			benchtime = f[5]
		}
		if f[3] != "<=" && f[3] != ">=" {
			errs = append(errs, fmt.Errorf("line %d: op %q is neither <= nor >=", n, f[3]))
			continue
		}
		limit, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: limit %q is not a number", n, f[4]))
			continue
		}
		if _, err := splitRegex(f[1]); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %v", n, err))
			continue
		}
		out = append(out, Budget{Line: n, Pkg: f[0], Bench: f[1], Unit: f[2], Op: f[3], Limit: limit, Guards: comment, Benchtime: benchtime})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// splitRegex compiles a -bench pattern element by element (split at '/'
// outside brackets and parentheses, as the testing package does).
func splitRegex(pattern string) ([]*regexp.Regexp, error) {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\\':
			i++
		case '/':
			if depth == 0 {
				parts = append(parts, pattern[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, pattern[start:])
	var out []*regexp.Regexp
	for _, p := range parts {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("benchmark regex %q: %v", pattern, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Matches reports whether a benchmark name (BenchmarkX/sub/sub, without the
// -N suffix) is selected by a -bench pattern.
func Matches(pattern, name string) bool {
	res, err := splitRegex(pattern)
	if err != nil {
		return false
	}
	elems := strings.Split(name, "/")
	for i, re := range res {
		if i >= len(elems) {
			return true // the pattern goes deeper than the result: a parent
		}
		if !re.MatchString(elems[i]) {
			return false
		}
	}
	return true
}

// Result is one benchmark result line.
type Result struct {
	Pkg     string
	Name    string
	Metrics map[string]float64
}

var resultLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// Problem is a benchmark that was skipped or failed, with what it said.
type Problem struct {
	Pkg    string
	Name   string
	Kind   string // SKIP or FAIL
	Reason string
}

// ParseOutput reads `go test -bench` output: results, and the benchmarks
// that were skipped or failed with the first line they logged.
func ParseOutput(pkg string, r io.Reader) ([]Result, []Problem) {
	pkg = cleanPkg(pkg)
	var results []Result
	var problems []Problem
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var last *Problem
	for sc.Scan() {
		line := sc.Text()
		if m := resultLine.FindStringSubmatch(line); m != nil {
			f := strings.Fields(m[2])
			res := Result{Pkg: pkg, Name: m[1], Metrics: map[string]float64{}}
			for i := 0; i+1 < len(f); i += 2 {
				if v, err := strconv.ParseFloat(f[i], 64); err == nil {
					res.Metrics[f[i+1]] = v
				}
			}
			results = append(results, res)
			last = nil
			continue
		}
		t := strings.TrimSpace(line)
		for _, kind := range []string{"SKIP", "FAIL"} {
			if rest, ok := strings.CutPrefix(t, "--- "+kind+": "); ok {
				name := strings.Fields(rest)[0]
				problems = append(problems, Problem{Pkg: pkg, Name: name, Kind: kind})
				last = &problems[len(problems)-1]
				t = ""
			}
		}
		if last != nil && last.Reason == "" && t != "" && !strings.HasPrefix(t, "---") {
			// "file_test.go:12: reason"
			if _, after, ok := strings.Cut(t, ": "); ok && strings.Contains(t[:len(t)-len(after)], ".go:") {
				t = after
			}
			last.Reason = t
		}
	}
	return results, problems
}

func cleanPkg(p string) string {
	return strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
}

// Verdict is one budget judged against one result (or against none).
type Verdict struct {
	Budget Budget
	Name   string  // the result judged ("" when none matched)
	Value  float64 // its figure
	Mark   string  // ✓ ✗ ?
	Reason string  // for ?
}

// leaf reports whether a problem is not only the consequence of a problem
// (or a result) further down its name.
func leaf(p Problem, results []Result, problems []Problem) bool {
	for _, r := range results {
		if strings.HasPrefix(r.Name, p.Name+"/") {
			return false
		}
	}
	for _, q := range problems {
		if strings.HasPrefix(q.Name, p.Name+"/") {
			return false
		}
	}
	return true
}

// Judge compares every budget with the results that match it. A benchmark
// the budget selects that was skipped or failed is "?" (not met) with the
// reason it gave; so is a budget that no result matches.
func Judge(budgets []Budget, results []Result, problems []Problem) []Verdict {
	var out []Verdict
	for _, bd := range budgets {
		found := false
		for _, r := range results {
			if r.Pkg != cleanPkg(bd.Pkg) || !Matches(bd.Bench, r.Name) {
				continue
			}
			v, ok := r.Metrics[bd.Unit]
			if !ok {
				continue
			}
			found = true
			met := v <= bd.Limit
			if bd.Op == ">=" {
				met = v >= bd.Limit
			}
			mark := "✓"
			if !met {
				mark = "✗"
			}
			out = append(out, Verdict{Budget: bd, Name: r.Name, Value: v, Mark: mark})
		}
		for _, p := range problems {
			if p.Pkg == cleanPkg(bd.Pkg) && (Matches(bd.Bench, p.Name) || p.Name == bd.Bench) && leaf(p, results, problems) {
				found = true
				reason := strings.ToLower(p.Kind)
				if p.Reason != "" {
					reason += ": " + p.Reason
				}
				out = append(out, Verdict{Budget: bd, Name: p.Name, Mark: "?", Reason: reason})
			}
		}
		if !found {
			out = append(out, Verdict{Budget: bd, Mark: "?", Reason: "no result reports " + bd.Unit})
		}
	}
	return out
}

// Format is the report of the verdicts, one line each.
func Format(vs []Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		what := ""
		if v.Budget.Guards != "" {
			what = "  # " + v.Budget.Guards
		}
		if v.Mark == "?" {
			name := v.Name
			if name == "" {
				name = v.Budget.Bench
			}
			fmt.Fprintf(&b, "? %s %s %s %s %g: %s%s\n", v.Budget.Pkg, name, v.Budget.Unit, v.Budget.Op, v.Budget.Limit, v.Reason, what)
			continue
		}
		fmt.Fprintf(&b, "%s %s %s %s %.3g %s %g%s\n", v.Mark, v.Budget.Pkg, v.Name, v.Budget.Unit, v.Value, v.Budget.Op, v.Budget.Limit, what)
	}
	return b.String()
}

// Failed counts the verdicts that are not ✓.
func Failed(vs []Verdict) int {
	n := 0
	for _, v := range vs {
		if v.Mark != "✓" {
			n++
		}
	}
	return n
}

// binDir is where the check keeps its test binaries between runs (under
// bin/, which `make clean` removes): go links a binary again only when its
// inputs changed, so a check after a check links nothing (a fresh temporary
// directory had every run link e2e.test, the host and three more binaries).
var binDir = filepath.Join("bin", "benchcheck")

// buildTests compiles the test binary of every package the runs name, in
// one go test -c, into binDir, and returns each package's binary.
func buildTests(runs []run) (map[string]string, error) {
	dir, err := filepath.Abs(binDir) // each run starts in its package's directory
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bins := map[string]string{}
	args := []string{"test", "-c", "-vet=off", "-o", dir + string(filepath.Separator)}
	for _, r := range runs {
		if _, ok := bins[r.pkg]; ok {
			continue
		}
		bins[r.pkg] = filepath.Join(dir, filepath.Base(r.pkg)+".test")
		args = append(args, "./"+r.pkg)
	}
	fmt.Fprintf(os.Stderr, "go %s\n", strings.Join(args, " "))
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
	}
	for pkg, bin := range bins {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("the test binary of %s: %v (two packages with the same last element?)", pkg, err)
		}
	}
	return bins, nil
}

// buildHost builds bin/flemma-host as nvimtest.BuildHost does (static),
// in place: go leaves a binary that is up to date alone, and replaces one
// that is not by a rename or after removing it, never by writing into it
// (a Neovim running the old one keeps it).
func buildHost() error {
	cmd := exec.Command("go", "build", "-o", filepath.Join("bin", "flemma-host"), "./cmd/flemma-host")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/flemma-host: %v", err)
	}
	return nil
}

// run is one execution of a package's test binary: the benchmarks of its
// budgets with one benchtime.
type run struct{ pkg, benchtime string }

func main() {
	file := flag.String("budgets", "docs/budgets.txt", "the budgets file")
	benchtime := flag.String("benchtime", "", "-benchtime for every run (default: each budget's, else the testing package's)")
	only := flag.String("only", "", "run only budgets whose package or benchmark contains this")
	flag.Parse()
	f, err := os.Open(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	budgets, err := ParseBudgets(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// One `go test` per package and benchtime, running every benchmark its
	// budgets name (their first element: the budgets' full patterns pick
	// the figures from the results), so that a package's test binary is
	// built, and its TestMain run, once.
	var runs []run
	names := map[run][]string{}
	var selected []Budget
	for _, bd := range budgets {
		if *only != "" && !strings.Contains(bd.Pkg+" "+bd.Bench, *only) {
			continue
		}
		selected = append(selected, bd)
		bt := bd.Benchtime
		if *benchtime != "" {
			bt = *benchtime
		}
		r := run{cleanPkg(bd.Pkg), bt}
		if _, ok := names[r]; !ok {
			runs = append(runs, r)
		}
		parts, _ := splitRegex(bd.Bench) // checked by ParseBudgets
		first := parts[0].String()
		if !slices.Contains(names[r], first) {
			names[r] = append(names[r], first)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].pkg < runs[j].pkg })
	// Every package's test binary is built first, in one go (the build
	// then runs in parallel and never while a benchmark measures), and
	// each run executes its package's binary: e2e, with three runs, was
	// linked three times (issue 23: the check should take about 30 s).
	if len(runs) == 0 {
		fmt.Fprintln(os.Stderr, "no budget selected")
		os.Exit(2)
	}
	start := time.Now()
	// The host the e2e benchmarks start, built once while the test
	// binaries build (each run of the e2e binary linked it again:
	// nvimtest.BuildHost skips the build with FLEMMA_HOST_BUILT=1).
	hostErr := make(chan error, 1)
	go func() { hostErr <- buildHost() }()
	bins, err := buildTests(runs)
	if herr := <-hostErr; err == nil && herr != nil {
		err = herr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv("FLEMMA_HOST_BUILT", "1")
	fmt.Fprintf(os.Stderr, "built %d test binaries and the host in %.1f s\n", len(bins), time.Since(start).Seconds())
	var results []Result
	var problems []Problem
	for _, r := range runs {
		bench := strings.Join(names[r], "|")
		args := []string{"-test.run", "^$", "-test.bench", bench, "-test.count", "1", "-test.timeout", "30m"}
		if r.benchtime != "" {
			args = append(args, "-test.benchtime", r.benchtime)
		}
		log, lerr := os.CreateTemp("", "benchcheck-*.txt")
		if lerr != nil {
			fmt.Fprintln(os.Stderr, lerr)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "%s: %s %s  (output: %s)\n", r.pkg, filepath.Base(bins[r.pkg]), strings.Join(args, " "), log.Name())
		t0 := time.Now()
		cmd := exec.Command(bins[r.pkg], args...)
		cmd.Dir = r.pkg // as go test runs it: in the package's directory
		var buf strings.Builder
		cmd.Stdout = io.MultiWriter(&buf, log)
		cmd.Stderr = io.MultiWriter(os.Stderr, log)
		err := cmd.Run()
		log.Close()
		fmt.Fprintf(os.Stderr, "%s: %.1f s\n", r.pkg, time.Since(t0).Seconds())
		res, probs := ParseOutput(r.pkg, strings.NewReader(buf.String()))
		// A run that did not end well may have lost results without a
		// FAIL line for them (a timeout, a crash): its budgets are not met.
		if err != nil {
			probs = append(probs, Problem{Pkg: cleanPkg(r.pkg), Name: bench, Kind: "FAIL", Reason: fmt.Sprintf("-bench %s ./%s: %v (output: %s)", bench, r.pkg, err, log.Name())})
		}
		results = append(results, res...)
		problems = append(problems, probs...)
	}
	fmt.Fprintf(os.Stderr, "bench-check: %.1f s in all\n", time.Since(start).Seconds())
	vs := Judge(selected, results, problems)
	fmt.Print(Format(vs))
	if n := Failed(vs); n > 0 {
		fmt.Printf("%d of %d budgets not met\n", n, len(vs))
		os.Exit(1)
	}
	fmt.Printf("all %d budgets met\n", len(vs))
}
