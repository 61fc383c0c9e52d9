package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// SocketEnv are the variables that lead a command to a socket of the user
// — Neovim's RPC socket (nvim --server $NVIM --remote-expr 'system(…)'
// runs outside every sandbox), agents, buses, displays, container engines,
// terminal multiplexers and terminals with remote control — or to their
// folders. They are removed from the environment of every command,
// sandboxed or not, whatever env_deny says; under bubblewrap the sockets
// are hidden as well (see WrapCommand).
var SocketEnv = []string{
	"NVIM", "NVIM_LISTEN_ADDRESS", "NVIM_SERVER",
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "GNOME_KEYRING_CONTROL", "GNOME_KEYRING_PID",
	"DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE",
	"XDG_RUNTIME_DIR", "SESSION_MANAGER", "XDG_SESSION_COOKIE",
	"DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET", "XAUTHORITY", "XAUTHLOCALHOSTNAME",
	"SWAYSOCK", "I3SOCK", "HYPRLAND_INSTANCE_SIGNATURE", "NIRI_SOCKET",
	"PULSE_SERVER", "PIPEWIRE_REMOTE",
	"DOCKER_HOST", "DOCKER_CONTEXT", "CONTAINER_HOST", "CONTAINER_CONNECTION", "PODMAN_HOST",
	"CONTAINERD_ADDRESS", "BUILDKIT_HOST", "LIMA_INSTANCE", "COLIMA_*",
	"TMUX", "TMUX_PANE", "TMUX_TMPDIR", "STY", "WINDOW", "ZELLIJ", "ZELLIJ_*", "BYOBU_*",
	"KITTY_LISTEN_ON", "KITTY_PUBLIC_KEY", "WEZTERM_UNIX_SOCKET", "WEZTERM_PANE", "ALACRITTY_SOCKET",
	"VSCODE_IPC_HOOK*", "VSCODE_GIT_IPC_HANDLE", "VSCODE_GIT_ASKPASS_*", "JETBRAINS_REMOTE_*",
	"EMACS_SOCKET_NAME", "EMACS_SERVER_FILE", "INSIDE_EMACS",
}

// ResolvePath makes a path from tool input absolute and clean: `~` and
// `~/…` are the home directory, a relative path is joined onto base. It does
// not touch the filesystem (the sandbox resolves symlinks).
func ResolvePath(p, base string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

func CanonicalOr(p string) string {
	if c, err := canonical(p); err == nil {
		return c
	}
	return p
}
