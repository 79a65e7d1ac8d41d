//! Command-line options of the subcommands (`serve`, `doctor`): `--name value` or `--name=value`,
//! walked in one place so every subcommand takes them the same way.

/// Calls `on(name, value)` for every argument: `name` is the option as written (`--listen`), and
/// `value()` takes its value, inline after `=` or the next argument ("`--listen` needs a value"
/// when there is none). `on` refuses what it does not know; its first error ends the walk.
pub fn each_option(
    args: &[String],
    mut on: impl FnMut(&str, &mut dyn FnMut() -> Result<String, String>) -> Result<(), String>,
) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned()).ok_or(format!("{name} needs a value"));
        on(name, &mut value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::each_option;

    fn walk(args: &[&str]) -> Result<Vec<(String, Option<String>)>, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut seen = Vec::new();
        each_option(&args, |name, value| {
            match name {
                "--flag" => seen.push((name.to_string(), None)),
                "--opt" => seen.push((name.to_string(), Some(value()?))),
                other => return Err(format!("unknown option `{other}`")),
            }
            Ok(())
        })?;
        Ok(seen)
    }

    #[test]
    fn options_take_values_inline_or_next_and_refuse_the_unknown() {
        let got = walk(&["--opt", "a b", "--flag", "--opt=x=y"]).unwrap();
        assert_eq!(
            got,
            [("--opt".into(), Some("a b".into())), ("--flag".into(), None), ("--opt".into(), Some("x=y".into()))]
        );
        assert_eq!(walk(&["--opt"]).unwrap_err(), "--opt needs a value");
        assert_eq!(walk(&["--nope=1"]).unwrap_err(), "unknown option `--nope`");
        assert_eq!(walk(&["stray"]).unwrap_err(), "unknown option `stray`");
    }
}
