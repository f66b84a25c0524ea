//! `[[source.filter]]` (DESIGN §3a): each rule checked into a
//! [`crate::filter::Rule`], every problem reported at its own line as
//! `{label}.filter[i].{key}`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use toml::Spanned;

use super::check::Check;
use super::raw;
use crate::filter::{self, Action, Condition, Filters, Key, Rule};

/// `[[source.filter]]`: every rule checked, every problem reported at its
/// own line as `{label}.filter[i].{key}`.
pub(super) fn build_filters(
    c: &mut Check<'_>,
    label: &str,
    raw: Option<&Spanned<Vec<Spanned<raw::RawFilter>>>>,
) -> Option<Arc<Filters>> {
    let Some(list) = raw else {
        return Some(Arc::default());
    };
    if list.get_ref().len() > filter::MAX_RULES {
        c.at(
            list,
            &format!("{label}.filter"),
            format!(
                "{} rules; a source takes at most {}",
                list.get_ref().len(),
                filter::MAX_RULES
            ),
        );
        return None;
    }
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut rules = Some(Vec::new());
    for (i, rf) in list.get_ref().iter().enumerate() {
        let f = rf.get_ref();
        let table = Some(rf.span());
        let field = |k: &str| format!("{label}.filter[{i}].{k}");

        let name = c
            .required(&f.name, table.clone(), &field("name"))
            .and_then(|v| {
                let n = v.get_ref();
                let ok = !n.is_empty()
                    && n.len() <= 64
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
                if !ok {
                    c.at(
                        v,
                        &field("name"),
                        format!("\"{n}\" is not a rule name: use 1 to 64 of A-Z a-z 0-9 . _ -"),
                    );
                    return None;
                }
                let line = c.lines.line(v.span().start);
                if let Some(first) = names.get(n.as_str()) {
                    c.at(
                        v,
                        &field("name"),
                        format!(
                            "duplicate rule name \"{n}\" in this source (first used on line {first})"
                        ),
                    );
                    return None;
                }
                names.insert(n.as_str(), line);
                Some(n.clone())
            });
        let pointer = c
            .required(&f.field, table.clone(), &field("field"))
            .and_then(|v| {
                if v.get_ref().is_empty() {
                    c.at(
                        v,
                        &field("field"),
                        "is empty; give a JSON pointer into the body, e.g. \"/data/object/customer\"",
                    );
                    return None;
                }
                c.json_pointer(v, &field("field"))
            });
        let action_value = c.required(&f.action, table.clone(), &field("action"));
        let action = c.word(
            action_value,
            &field("action"),
            &[("ignore", Action::Ignore), ("deliver", Action::Deliver)],
            None,
        );
        let condition = filter_condition(c, f, table, &format!("{label}.filter[{i}]"));
        match (name, pointer, action, condition, &mut rules) {
            (Some(name), Some(field), Some(action), Some(condition), Some(rules)) => {
                rules.push(Rule {
                    name,
                    field,
                    condition,
                    action,
                })
            }
            _ => rules = None,
        }
    }
    rules.map(|rules| Arc::new(Filters::new(rules)))
}

/// Exactly one of `equals`, `in`, `not_in`, `prefix`, `exists`.
fn filter_condition(
    c: &mut Check<'_>,
    f: &raw::RawFilter,
    table: Option<std::ops::Range<usize>>,
    rule: &str,
) -> Option<Condition> {
    let field = |k: &str| format!("{rule}.{k}");
    let given: Vec<(&str, std::ops::Range<usize>)> = [
        ("equals", f.equals.as_ref().map(Spanned::span)),
        ("in", f.in_list.as_ref().map(Spanned::span)),
        ("not_in", f.not_in.as_ref().map(Spanned::span)),
        ("prefix", f.prefix.as_ref().map(Spanned::span)),
        ("exists", f.exists.as_ref().map(Spanned::span)),
    ]
    .into_iter()
    .filter_map(|(k, span)| span.map(|s| (k, s)))
    .collect();
    match given.as_slice() {
        [] => {
            let poisoned = ["equals", "in", "not_in", "prefix", "exists"]
                .iter()
                .any(|k| c.poisoned.contains(&field(k)));
            if !poisoned {
                c.push(
                    table,
                    rule,
                    "the rule has no condition; give exactly one of equals, in, not_in, prefix, exists",
                );
            }
            return None;
        }
        [_] => {}
        [_, (second, span), ..] => {
            let names: Vec<&str> = given.iter().map(|(k, _)| *k).collect();
            c.push(
                Some(span.clone()),
                &field(second),
                format!(
                    "the rule has {} conditions ({}); give exactly one",
                    names.len(),
                    names.join(", ")
                ),
            );
            return None;
        }
    }
    let json = |c: &mut Check<'_>, v: &toml::Value, span: std::ops::Range<usize>, key: &str| {
        match toml_to_json(v) {
            Ok(j) => Some(j),
            Err(m) => {
                c.push(Some(span), &field(key), m);
                None
            }
        }
    };
    if let Some(v) = &f.equals {
        return json(c, v.get_ref(), v.span(), "equals").map(|j| Condition::Equals(Key::of(&j)));
    }
    if let Some(v) = &f.prefix {
        return Some(Condition::Prefix(v.get_ref().clone()));
    }
    if let Some(v) = &f.exists {
        return Some(Condition::Exists(*v.get_ref()));
    }
    let (key, list) = match (&f.in_list, &f.not_in) {
        (Some(v), _) => ("in", v),
        (None, Some(v)) => ("not_in", v),
        (None, None) => return None,
    };
    if list.get_ref().len() > filter::MAX_VALUES {
        c.at(
            list,
            &field(key),
            format!(
                "{} values; a list takes at most {}",
                list.get_ref().len(),
                filter::MAX_VALUES
            ),
        );
        return None;
    }
    let mut set = HashSet::with_capacity(list.get_ref().len());
    for (i, v) in list.get_ref().iter().enumerate() {
        match toml_to_json(v) {
            Ok(j) => {
                set.insert(Key::of(&j));
            }
            Err(m) => {
                c.at(list, &field(key), format!("value {i}: {m}"));
                return None;
            }
        }
    }
    Some(if key == "in" {
        Condition::In(set)
    } else {
        Condition::NotIn(set)
    })
}

/// A TOML value as the JSON value it stands for; a date or time has none.
fn toml_to_json(v: &toml::Value) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    Ok(match v {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .ok_or_else(|| format!("{f} is not a JSON number"))?,
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => {
            return Err(format!(
                "{d} is a TOML date, which JSON has not; quote it to compare a string"
            ));
        }
        toml::Value::Array(a) => J::Array(a.iter().map(toml_to_json).collect::<Result<_, _>>()?),
        toml::Value::Table(t) => J::Object(
            t.iter()
                .map(|(k, v)| Ok((k.clone(), toml_to_json(v)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}
