//! `[[source.filter]]` (DESIGN §3a): ignoring a verified event by what its
//! signed body says.
//!
//! Rules are tried in order after `event_types`; the first whose condition
//! holds decides: [`Action::Ignore`] answers `200 {"ignored":"filtered"}`
//! (no nonce, nothing forwarded or stored, no trail record), and
//! [`Action::Deliver`] ends the list. An event no rule meets is delivered.
//!
//! # What a rule reads
//!
//! Only the body, which the signature covers: no header decides. Whether the
//! body is JSON or a form is read from the body itself (JSON starts with `{`
//! or `[` after any whitespace; anything else is read as
//! `application/x-www-form-urlencoded`), never from the unsigned
//! `Content-Type`, so a replayed request with another content type meets the
//! same rules.
//!
//! - JSON: `field` is an RFC 6901 pointer into the document.
//! - A form (Slack's slash commands and interactivity, Twilio): the
//!   pointer's first segment names a form field (the first one of that name);
//!   with no further segments the field's value is a JSON string; with more,
//!   the value is parsed as JSON (Slack's `payload=`) and the rest of the
//!   pointer goes into it.
//!
//! # Comparing
//!
//! Values compare by JSON type and value: `"1"` is not `1`, `"false"` is not
//! `false`, and `1` equals `1.0`. `in` and `not_in` lists are hash sets of
//! [`Key`]s, looked up in constant time whatever their length. A field that
//! is absent meets `exists = false` and `not_in`, and no other condition.
//!
//! The body is parsed once per request, only for a source with rules.

use std::collections::HashSet;

use serde_json::Value;

/// At most this many rules a source (DESIGN §3a).
pub const MAX_RULES: usize = 64;
/// At most this many values in one `in` or `not_in` list.
pub const MAX_VALUES: usize = 100_000;

/// What a rule does when its condition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Answer `200 {"ignored":"filtered"}` and do nothing more.
    Ignore,
    /// Deliver the event; no later rule is tried.
    Deliver,
}

impl Action {
    pub fn word(self) -> &'static str {
        match self {
            Action::Ignore => "ignore",
            Action::Deliver => "deliver",
        }
    }
}

/// A JSON value as compared by a rule: type and value, numbers by value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Null,
    Bool(bool),
    /// An integral number (`1` and `1.0` alike).
    Int(i128),
    /// Any other number, by its bits (`-0.0` read as `0`, an integer).
    Float(u64),
    Str(String),
    /// An array or an object, as its JSON text with object keys sorted.
    Composite(String),
}

impl Key {
    pub fn of(value: &Value) -> Key {
        match value {
            Value::Null => Key::Null,
            Value::Bool(b) => Key::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Key::Int(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    Key::Int(i128::from(u))
                } else {
                    let f = n.as_f64().unwrap_or(f64::NAN);
                    // Integral floats within i64's range compare as integers.
                    if f.fract() == 0.0 && f.abs() < 9.2e18 {
                        Key::Int(f as i128)
                    } else {
                        Key::Float(f.to_bits())
                    }
                }
            }
            Value::String(s) => Key::Str(s.clone()),
            // serde_json's map is ordered by key, so equal objects print alike.
            Value::Array(_) | Value::Object(_) => Key::Composite(value.to_string()),
        }
    }
}

/// What a rule's field must be for the rule to decide.
#[derive(Debug, Clone)]
pub enum Condition {
    Equals(Key),
    In(HashSet<Key>),
    NotIn(HashSet<Key>),
    /// A string field starting with this.
    Prefix(String),
    Exists(bool),
}

impl Condition {
    /// The config key that sets it.
    pub fn word(&self) -> &'static str {
        match self {
            Condition::Equals(_) => "equals",
            Condition::In(_) => "in",
            Condition::NotIn(_) => "not_in",
            Condition::Prefix(_) => "prefix",
            Condition::Exists(_) => "exists",
        }
    }

    /// Whether a field with `value` (`None`: absent) meets it.
    pub fn holds(&self, value: Option<&Value>) -> bool {
        match (self, value) {
            (Condition::Exists(want), v) => *want == v.is_some(),
            (Condition::NotIn(_), None) => true,
            (_, None) => false,
            (Condition::Equals(key), Some(v)) => *key == Key::of(v),
            (Condition::In(set), Some(v)) => set.contains(&Key::of(v)),
            (Condition::NotIn(set), Some(v)) => !set.contains(&Key::of(v)),
            (Condition::Prefix(p), Some(Value::String(s))) => s.starts_with(p.as_str()),
            (Condition::Prefix(_), Some(_)) => false,
        }
    }
}

/// One `[[source.filter]]`.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Unique in its source; the `rule` label of `hookgate_filtered_total`.
    pub name: String,
    /// An RFC 6901 pointer (checked when the config was read).
    pub field: String,
    pub condition: Condition,
    pub action: Action,
}

/// The body as the rules read it.
enum Document {
    Json(Value),
    Form(Vec<(Vec<u8>, Vec<u8>)>),
    /// Neither JSON nor a form that parsed: every field is absent.
    Unreadable,
}

impl Document {
    fn read(body: &[u8]) -> Document {
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if matches!(first, Some(b'{' | b'[')) {
            return match serde_json::from_slice(body) {
                Ok(v) => Document::Json(v),
                Err(_) => Document::Unreadable,
            };
        }
        Document::Form(crate::scheme::handshake::form_pairs(body))
    }

    /// The value at `pointer`, if there is one. Form values are owned,
    /// hence the `Cow`-like return.
    fn get(&self, pointer: &str) -> Option<Value> {
        match self {
            Document::Json(v) => v.pointer(pointer).cloned(),
            Document::Unreadable => None,
            Document::Form(pairs) => {
                let rest = pointer.strip_prefix('/')?;
                let (segment, inner) = match rest.find('/') {
                    Some(i) => (&rest[..i], &rest[i..]),
                    None => (rest, ""),
                };
                let name = segment.replace("~1", "/").replace("~0", "~");
                let (_, raw) = pairs.iter().find(|(k, _)| k == name.as_bytes())?;
                if inner.is_empty() {
                    let text = String::from_utf8(raw.clone()).ok()?;
                    return Some(Value::String(text));
                }
                let nested: Value = serde_json::from_slice(raw).ok()?;
                nested.pointer(inner).cloned()
            }
        }
    }
}

/// Which rule decided, if any, for one body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Index into the source's rules; `None`: no rule met (delivered).
    pub rule: Option<usize>,
    pub action: Action,
}

/// Tries `rules` in order on `body`.
pub fn decide(rules: &[Rule], body: &[u8]) -> Decision {
    if rules.is_empty() {
        return Decision {
            rule: None,
            action: Action::Deliver,
        };
    }
    let document = Document::read(body);
    for (i, rule) in rules.iter().enumerate() {
        if rule.condition.holds(document.get(&rule.field).as_ref()) {
            return Decision {
                rule: Some(i),
                action: rule.action,
            };
        }
    }
    Decision {
        rule: None,
        action: Action::Deliver,
    }
}

/// Each rule's verdict on `body` in order, for `hookgate filter test`:
/// whether its condition holds, and the field's value as found.
pub fn explain(rules: &[Rule], body: &[u8]) -> Vec<(bool, Option<Value>)> {
    let document = Document::read(body);
    rules
        .iter()
        .map(|rule| {
            let value = document.get(&rule.field);
            (rule.condition.holds(value.as_ref()), value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(name: &str, field: &str, condition: Condition, action: Action) -> Rule {
        Rule {
            name: name.into(),
            field: field.into(),
            condition,
            action,
        }
    }

    fn set(values: &[Value]) -> HashSet<Key> {
        values.iter().map(Key::of).collect()
    }

    #[test]
    fn keys_compare_by_type_and_value() {
        assert_eq!(Key::of(&json!(1)), Key::of(&json!(1.0)));
        assert_ne!(Key::of(&json!(1)), Key::of(&json!("1")));
        assert_ne!(Key::of(&json!(false)), Key::of(&json!("false")));
        assert_ne!(Key::of(&json!(null)), Key::of(&json!("null")));
        assert_eq!(Key::of(&json!(1.5)), Key::of(&json!(1.5)));
        assert_ne!(Key::of(&json!(1.5)), Key::of(&json!(2)));
        assert_eq!(
            Key::of(&json!({"a": 1, "b": [2]})),
            Key::of(&serde_json::from_str::<Value>(r#"{"b":[2],"a":1}"#).expect("json"))
        );
        assert_eq!(Key::of(&json!(u64::MAX)), Key::Int(i128::from(u64::MAX)));
    }

    #[test]
    fn conditions_on_present_and_absent_fields() {
        let v = json!("cus_1");
        let five = json!(5);
        let cases: Vec<(Condition, Option<&Value>, bool)> = vec![
            (Condition::Exists(true), Some(&v), true),
            (Condition::Exists(true), None, false),
            (Condition::Exists(false), None, true),
            (Condition::Exists(false), Some(&v), false),
            (Condition::NotIn(set(&[json!("cus_2")])), None, true),
            (Condition::NotIn(set(&[json!("cus_2")])), Some(&v), true),
            (Condition::NotIn(set(&[json!("cus_1")])), Some(&v), false),
            (Condition::In(set(&[json!("cus_1")])), Some(&v), true),
            (Condition::In(set(&[json!("cus_1")])), None, false),
            (Condition::Equals(Key::of(&v)), Some(&v), true),
            (Condition::Equals(Key::of(&v)), None, false),
            (Condition::Prefix("cus_".into()), Some(&v), true),
            (Condition::Prefix("cus_".into()), Some(&five), false),
            (Condition::Prefix("acct_".into()), Some(&v), false),
            (Condition::Prefix("cus_".into()), None, false),
        ];
        for (condition, value, want) in cases {
            assert_eq!(condition.holds(value), want, "{condition:?} on {value:?}");
        }
    }

    #[test]
    fn the_first_rule_that_holds_decides() {
        let rules = vec![
            rule(
                "keep-vip",
                "/data/object/customer",
                Condition::Equals(Key::of(&json!("cus_vip"))),
                Action::Deliver,
            ),
            rule(
                "test-mode",
                "/livemode",
                Condition::Equals(Key::of(&json!(false))),
                Action::Ignore,
            ),
        ];
        let body = br#"{"livemode":false,"data":{"object":{"customer":"cus_vip"}}}"#;
        assert_eq!(
            decide(&rules, body),
            Decision {
                rule: Some(0),
                action: Action::Deliver
            }
        );
        let body = br#"{"livemode":false,"data":{"object":{"customer":"cus_2"}}}"#;
        assert_eq!(
            decide(&rules, body),
            Decision {
                rule: Some(1),
                action: Action::Ignore
            }
        );
        // "false" the string is not false the boolean.
        let body = br#"{"livemode":"false"}"#;
        assert_eq!(decide(&rules, body).rule, None);
        assert_eq!(decide(&[], body).action, Action::Deliver);
    }

    #[test]
    fn form_fields_and_json_inside_them() {
        let team = rule(
            "test-team",
            "/payload/team/id",
            Condition::Equals(Key::of(&json!("T_TEST"))),
            Action::Ignore,
        );
        let command = rule(
            "sandbox-command",
            "/team_id",
            Condition::In(set(&[json!("T_TEST")])),
            Action::Ignore,
        );
        let rules = vec![team, command];
        let payload = br#"payload=%7B%22team%22%3A%7B%22id%22%3A%22T_TEST%22%7D%7D"#;
        assert_eq!(decide(&rules, payload).rule, Some(0));
        let slash = b"token=x&team_id=T_TEST&command=%2Fdeploy";
        assert_eq!(decide(&rules, slash).rule, Some(1));
        let other = b"token=x&team_id=T_PROD&command=%2Fdeploy";
        assert_eq!(decide(&rules, other).rule, None);
        // A form field is a string: a number in the rule does not meet it.
        let numeric = rule(
            "n",
            "/count",
            Condition::Equals(Key::of(&json!(3))),
            Action::Ignore,
        );
        assert_eq!(decide(&[numeric], b"count=3").rule, None);
        // Escaped pointer segments name form fields with / and ~.
        let escaped = rule("e", "/a~1b~0c", Condition::Exists(true), Action::Ignore);
        assert_eq!(decide(&[escaped], b"a%2Fb~c=1").rule, Some(0));
    }

    #[test]
    fn a_body_that_is_not_json_has_no_fields() {
        let absent = rule("absent", "/x", Condition::Exists(false), Action::Ignore);
        assert_eq!(
            decide(std::slice::from_ref(&absent), b"{not json").rule,
            Some(0)
        );
        let present = rule("present", "/x", Condition::Exists(true), Action::Ignore);
        assert_eq!(decide(&[present], b"{not json").rule, None);
    }

    #[test]
    fn a_hundred_thousand_values_are_one_lookup() {
        let values: Vec<Value> = (0..MAX_VALUES).map(|i| json!(format!("cus_{i}"))).collect();
        let rules = vec![rule(
            "customers",
            "/customer",
            Condition::In(set(&values)),
            Action::Ignore,
        )];
        assert_eq!(decide(&rules, br#"{"customer":"cus_99999"}"#).rule, Some(0));
        assert_eq!(decide(&rules, br#"{"customer":"cus_100000"}"#).rule, None);
    }
}
