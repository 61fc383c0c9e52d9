package shell

// Programs whose purpose is running code: make and the build and test
// tools, package managers (lifecycle scripts). Container tools are not
// among them: docker ps is how a rule like bash(docker ps*) is meant, and
// docker's options (-H, --config, ...) are not known, so they ask. The deny
// side reads most of them as commands it does not know (their arguments
// may name a command) or, for make, as code (cMake). On the approve side a
// rule that names one grants running code — the project's code, which the
// model can change with write and edit — whatever the options: no option
// of go test, make or npm can do more than the program already does. A
// rule whose '*' stands for one of them does not match it (bash(*) does
// not approve make).
var runnerNames = []string{"make", "gmake", "go", "cargo", "npm", "npx", "yarn", "pnpm", "pytest",
	"tox", "nox", "poetry", "pipenv", "uv", "uvx", "pip", "mvn", "gradle", "gradlew", "cmake", "ctest",
	"ninja", "meson", "just", "task", "rake", "bundle", "cabal", "stack", "mix",
	"dotnet", "swift", "zig", "composer"}

var runnerExamples = []example{
	denies("rm *", "make clean", No),
	denies("rm *", "make rm", MayRun),
	unverifiable("make $(X)"),
	approves("make test*", "make test", true),
	approves("make test*", "make test --eval=x", true), // make runs what the Makefile says anyway
	approves("go test*", "go test ./... -run TestX -count=1", true),
	approves("go test*", "go test -exec=/bin/sh ./...", true), // go test runs code by design
	approves("npm test*", "npm test -- --watch", true),
	approves("python3 *", "python3 -c print", true),
	approves("*", "make", false),
	approves("*", "go test ./...", false),
	approves("*", "npm test", false),
	approves("* test", "go test", false),
	approves("./gradlew build*", "./gradlew build", true),
	approves("./gradlew build*", "./gradlew build --offline", true),
	approves("mytool *", "mytool run x", true),           // operands of an unknown program
	approves("mytool *", "mytool --config=x run", false), // an option nobody knows
	approves("mytool --fast*", "mytool --fast x", true),
	approves("* --version", "gcc --version", true),
	approves("docker ps*", "docker ps", true),
	approves("docker ps*", "docker ps -H ssh://x", false),
}
