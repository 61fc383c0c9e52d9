package shell

import (
	"strings"
)

// ssh: the remote command is a script for the remote shell; ProxyCommand
// and LocalCommand run here; without a command, stdin feeds a shell.
func (a *analysis) ssh(args []word, depth int) {
	host := false
	noShell := false
	i := 0
	for i < len(args) {
		w := args[i]
		s := w.val
		if !w.lit || len(s) < 2 || s[0] != '-' {
			if host {
				break
			}
			host = true
			i++
			continue
		}
		i++
		if s == "--" {
			if !host && i < len(args) {
				host = true
				i++
			}
			break
		}
		for j := 1; j < len(s); j++ {
			ch := s[j]
			if strings.IndexByte("NVGOQWs", ch) >= 0 {
				noShell = true
			}
			if strings.IndexByte("BbcDEeFIiJLlmOopQRSWw", ch) < 0 {
				continue
			}
			var v word
			if j+1 < len(s) {
				v = word{val: s[j+1:], lit: true, eq: -1}
			} else if i < len(args) {
				v = args[i]
				i++
			}
			switch ch {
			case 'o':
				a.sshOption(v, depth)
			case 'F':
				a.unverify() // a configuration file may hold ProxyCommand
			}
			a.suspect(v)
			break
		}
	}
	if i > len(args) {
		i = len(args)
	}
	rest := args[i:]
	if len(rest) == 0 {
		if !noShell {
			a.unverify() // stdin feeds the remote shell
		}
		return
	}
	a.joinCode(rest, depth)
}

func (a *analysis) sshOption(v word, depth int) {
	if !v.lit {
		a.unverify()
		return
	}
	key, val := v.val, ""
	if i := strings.IndexAny(key, "= \t"); i >= 0 {
		key, val = key[:i], strings.TrimLeft(key[i+1:], "= \t")
	}
	switch asciiLower(key) {
	case "proxycommand", "localcommand", "knownhostscommand", "remotecommand":
		a.script(val, depth+1)
	case "include":
		a.unverify()
	}
}
