//! The environment of every Cursor CLI child, in either mode: what of the sidecar's own it
//! inherits ([`EnvPolicy`]) and what the bridge sets on top (docs/cursor-cli.md §7.2). The API key
//! goes here, never on a command line.

use std::ffi::OsString;

use crate::backend::contract::EnvPolicy;

/// Environment changes for every CLI child: colour off (ANSI breaks parsing, docs/cursor-cli.md
/// §7.2), the key when we have one, no inherited chat id (a sidecar started from a Cursor terminal
/// would otherwise resume that terminal's chat), and none of the bridge's own variables.
/// Deliberately not `Debug`: it holds the API key.
#[derive(Clone)]
pub struct ChildEnv {
    pub set: Vec<(OsString, OsString)>,
    pub remove: Vec<OsString>,
}

/// What [`EnvPolicy::Minimal`] keeps of the sidecar's environment: the CLI is a Node program
/// that needs its PATH, home and temporary folders to start and find its login (on Windows the
/// profile and system folders), the locale, and the proxy and certificate settings to reach
/// Cursor. Its own folders and credentials (`CURSOR_CONFIG_DIR`, `CURSOR_DATA_DIR`,
/// `CURSOR_AUTH_TOKEN`) stay too; `CURSOR_API_KEY` is set from the key the bridge was given.
const MINIMAL_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "NODE_EXTRA_CA_CERTS",
    "NODE_OPTIONS",
    "NODE_USE_ENV_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURSOR_CONFIG_DIR",
    "CURSOR_DATA_DIR",
    "CURSOR_AUTH_TOKEN",
    // Linux: the session bus, through which the login in the system keychain is reached.
    "DBUS_SESSION_BUS_ADDRESS",
    // Windows.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "USERNAME",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "PROGRAMW6432",
    "COMMONPROGRAMFILES",
    "HOMEDRIVE",
    "HOMEPATH",
    "COMPUTERNAME",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
    // macOS: the user's text encoding, read by the system frameworks Node loads.
    "__CF_USER_TEXT_ENCODING",
];

/// `name` is `pattern`, or starts with what comes before a trailing `*`. Windows' variable
/// names ignore case.
fn env_name_matches(pattern: &str, name: &str) -> bool {
    let same = |a: &str, b: &str| if cfg!(windows) { a.eq_ignore_ascii_case(b) } else { a == b };
    match pattern.strip_suffix('*') {
        Some(prefix) => {
            name.len() >= prefix.len() && name.is_char_boundary(prefix.len()) && same(&name[..prefix.len()], prefix)
        }
        None => same(pattern, name),
    }
}

/// Whether [`EnvPolicy::Minimal`] with `pass` keeps the inherited variable `name`.
pub fn minimal_keeps(name: &str, pass: &[String]) -> bool {
    MINIMAL_ENV.iter().any(|p| env_name_matches(p, name)) || pass.iter().any(|p| env_name_matches(p.trim(), name))
}

pub fn child_env(api_key: Option<&str>, policy: &EnvPolicy) -> ChildEnv {
    let mut set: Vec<(OsString, OsString)> = vec![("NO_COLOR".into(), "1".into()), ("FORCE_COLOR".into(), "0".into())];
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        set.push(("CURSOR_API_KEY".into(), key.into()));
    }
    // The bridge's own variables stay with the bridge: `CURSOR_BRIDGE_API_KEY` is the key HTTP
    // clients use, and the CLI (and every tool it runs) has no business seeing it.
    let mut remove: Vec<OsString> = vec!["CURSOR_CONVERSATION_ID".into()];
    remove.extend(std::env::vars_os().map(|(k, _)| k).filter(|k| {
        let name = k.to_string_lossy();
        // Windows reads `cursor_bridge_api_key` as the client key too: its names ignore case.
        env_name_matches("CURSOR_BRIDGE_*", &name)
            || match policy {
                EnvPolicy::Inherit => false,
                EnvPolicy::Minimal { pass } => !minimal_keeps(&name, pass),
            }
    }));
    ChildEnv { set, remove }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_goes_to_env_never_args() {
        let env = child_env(Some("key_secret"), &EnvPolicy::Inherit);
        assert!(env.set.contains(&("CURSOR_API_KEY".into(), "key_secret".into())));
        assert!(env.remove.contains(&"CURSOR_CONVERSATION_ID".into()));
        assert!(child_env(Some(""), &EnvPolicy::Inherit).set.iter().all(|(k, _)| k != "CURSOR_API_KEY"));
        assert!(child_env(None, &EnvPolicy::Inherit).set.iter().all(|(k, _)| k != "CURSOR_API_KEY"));
    }

    #[test]
    fn the_minimal_environment_keeps_what_the_cli_needs_and_what_the_operator_passes() {
        let pass = vec!["JAVA_HOME".to_string(), " MY_TOOL_* ".to_string()];
        for (name, kept) in [
            ("PATH", true),
            ("HOME", true),
            ("LC_ALL", true),
            ("HTTPS_PROXY", true),
            ("NODE_EXTRA_CA_CERTS", true),
            ("CURSOR_CONFIG_DIR", true),
            ("JAVA_HOME", true),
            ("MY_TOOL_TOKEN", true),
            ("AWS_SECRET_ACCESS_KEY", false),
            ("GITHUB_TOKEN", false),
            ("OPENAI_API_KEY", false),
            ("LC", false),
            ("MY_TOOL", false),
            ("PATHS", false),
        ] {
            assert_eq!(minimal_keeps(name, &pass), kept, "{name}");
        }
    }
}
