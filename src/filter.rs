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
//! The body is read once per request, only for a source with rules, and of
//! a JSON body only the members on a rule's path are built.

use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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

/// A source's rules, with the fields they read gathered in one tree so a
/// JSON body is walked once, whatever the number of rules: only the
/// members on a rule's path are looked at, everything else is skipped
/// without being built.
#[derive(Debug, Default)]
pub struct Filters {
    rules: Vec<Rule>,
    /// Per rule, the slot of its field in [`Filters::values`]' answer.
    slots: Vec<usize>,
    tree: Node,
    fields: usize,
}

/// One pointer segment's node: the slot of the field that ends here, if
/// a rule reads it, and the segments below.
#[derive(Debug, Default)]
struct Node {
    slot: Option<usize>,
    children: Vec<(String, Node)>,
}

impl Node {
    fn child(&self, segment: &str) -> Option<&Node> {
        self.children
            .iter()
            .find(|(s, _)| s == segment)
            .map(|(_, n)| n)
    }

    /// The value `v` stands at this node: its slot and every slot below.
    fn fill(&self, v: &Value, out: &mut [Option<Value>]) {
        if let Some(slot) = self.slot {
            out[slot] = Some(v.clone());
        }
        for (segment, child) in &self.children {
            let below = match v {
                Value::Object(map) => map.get(segment),
                Value::Array(items) => index(segment).and_then(|i| items.get(i)),
                _ => None,
            };
            if let Some(below) = below {
                child.fill(below, out);
            }
        }
    }
}

/// An RFC 6901 array index: digits, no leading zero but "0" itself.
fn index(segment: &str) -> Option<usize> {
    let digits = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    if !digits || (segment.len() > 1 && segment.starts_with('0')) {
        return None;
    }
    segment.parse().ok()
}

/// The segments of a pointer (checked when the config was read), unescaped.
fn segments(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

impl Filters {
    pub fn new(rules: Vec<Rule>) -> Filters {
        let mut tree = Node::default();
        let mut fields = 0;
        let mut slots = Vec::with_capacity(rules.len());
        for rule in &rules {
            let mut node = &mut tree;
            for segment in segments(&rule.field) {
                let at = match node.children.iter().position(|(s, _)| *s == segment) {
                    Some(at) => at,
                    None => {
                        node.children.push((segment, Node::default()));
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[at].1;
            }
            let slot = *node.slot.get_or_insert_with(|| {
                fields += 1;
                fields - 1
            });
            slots.push(slot);
        }
        Filters {
            rules,
            slots,
            tree,
            fields,
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Tries the rules in order on `body`.
    pub fn decide(&self, body: &[u8]) -> Decision {
        if self.rules.is_empty() {
            return Decision {
                rule: None,
                action: Action::Deliver,
            };
        }
        let values = self.values(body);
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.condition.holds(values[self.slots[i]].as_ref()) {
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
    pub fn explain(&self, body: &[u8]) -> Vec<(bool, Option<Value>)> {
        let values = self.values(body);
        self.rules
            .iter()
            .zip(&self.slots)
            .map(|(rule, slot)| {
                let value = values[*slot].clone();
                (rule.condition.holds(value.as_ref()), value)
            })
            .collect()
    }

    /// The value of every field the rules read (`None`: absent).
    fn values(&self, body: &[u8]) -> Vec<Option<Value>> {
        let mut out = vec![None; self.fields];
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if matches!(first, Some(b'{' | b'[')) {
            let mut de = serde_json::Deserializer::from_slice(body);
            let walked = Pick {
                node: &self.tree,
                out: &mut out,
            }
            .deserialize(&mut de)
            .and_then(|()| de.end());
            if walked.is_err() {
                // Not JSON after all: it has no fields.
                out.iter_mut().for_each(|v| *v = None);
            }
            return out;
        }
        let pairs = crate::scheme::handshake::form_pairs(body);
        for (segment, node) in &self.tree.children {
            let Some((_, raw)) = pairs.iter().find(|(k, _)| k == segment.as_bytes()) else {
                continue;
            };
            if let Some(slot) = node.slot {
                out[slot] = String::from_utf8(raw.clone()).ok().map(Value::String);
            }
            if node.children.is_empty() {
                continue;
            }
            // The field's value is JSON (Slack's `payload=`): the rest of the
            // pointer goes into it.
            if let Ok(nested) = serde_json::from_slice::<Value>(raw) {
                let slot = node.slot.and_then(|s| out[s].take());
                node.fill(&nested, &mut out);
                if let Some(s) = node.slot {
                    out[s] = slot;
                }
            }
        }
        out
    }
}

/// Walks a JSON value, descending only into members on a rule's path.
struct Pick<'n, 'o> {
    node: &'n Node,
    out: &'o mut Vec<Option<Value>>,
}

impl<'de> DeserializeSeed<'de> for Pick<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.node.slot.is_some() {
            // A rule reads this value whole: it and what is below it.
            let v = Value::deserialize(d)?;
            self.node.fill(&v, self.out);
            return Ok(());
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(child) = map.next_key_seed(Member(self.node))? {
            match child {
                Some(node) => map.next_value_seed(Pick {
                    node,
                    out: &mut *self.out,
                })?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let child = self.node.child(&i.to_string());
            let more = match child {
                Some(node) => seq
                    .next_element_seed(Pick {
                        node,
                        out: &mut *self.out,
                    })?
                    .is_some(),
                None => seq.next_element::<IgnoredAny>()?.is_some(),
            };
            if !more {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A member's key, read as the child node it names (borrowed when the key
/// has no escapes: nothing allocated for keys no rule reads).
struct Member<'n>(&'n Node);

impl<'de, 'n> DeserializeSeed<'de> for Member<'n> {
    type Value = Option<&'n Node>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'n> Visitor<'de> for Member<'n> {
    type Value = Option<&'n Node>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.child(key))
    }
}

/// Which rule decided, if any, for one body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Index into the source's rules; `None`: no rule met (delivered).
    pub rule: Option<usize>,
    pub action: Action,
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
            Filters::new(rules.clone()).decide(body),
            Decision {
                rule: Some(0),
                action: Action::Deliver
            }
        );
        let body = br#"{"livemode":false,"data":{"object":{"customer":"cus_2"}}}"#;
        assert_eq!(
            Filters::new(rules.clone()).decide(body),
            Decision {
                rule: Some(1),
                action: Action::Ignore
            }
        );
        // "false" the string is not false the boolean.
        let body = br#"{"livemode":"false"}"#;
        assert_eq!(Filters::new(rules.clone()).decide(body).rule, None);
        assert_eq!(Filters::default().decide(body).action, Action::Deliver);
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
        assert_eq!(Filters::new(rules.clone()).decide(payload).rule, Some(0));
        let slash = b"token=x&team_id=T_TEST&command=%2Fdeploy";
        assert_eq!(Filters::new(rules.clone()).decide(slash).rule, Some(1));
        let other = b"token=x&team_id=T_PROD&command=%2Fdeploy";
        assert_eq!(Filters::new(rules.clone()).decide(other).rule, None);
        // A form field is a string: a number in the rule does not meet it.
        let numeric = rule(
            "n",
            "/count",
            Condition::Equals(Key::of(&json!(3))),
            Action::Ignore,
        );
        assert_eq!(Filters::new(vec![numeric]).decide(b"count=3").rule, None);
        // Escaped pointer segments name form fields with / and ~.
        let escaped = rule("e", "/a~1b~0c", Condition::Exists(true), Action::Ignore);
        assert_eq!(
            Filters::new(vec![escaped]).decide(b"a%2Fb~c=1").rule,
            Some(0)
        );
    }

    #[test]
    fn a_body_that_is_not_json_has_no_fields() {
        let absent = rule("absent", "/x", Condition::Exists(false), Action::Ignore);
        assert_eq!(
            Filters::new(vec![absent.clone()]).decide(b"{not json").rule,
            Some(0)
        );
        let present = rule("present", "/x", Condition::Exists(true), Action::Ignore);
        assert_eq!(Filters::new(vec![present]).decide(b"{not json").rule, None);
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
        assert_eq!(
            Filters::new(rules.clone())
                .decide(br#"{"customer":"cus_99999"}"#)
                .rule,
            Some(0)
        );
        assert_eq!(
            Filters::new(rules.clone())
                .decide(br#"{"customer":"cus_100000"}"#)
                .rule,
            None
        );
    }

    #[test]
    fn one_walk_reads_nested_members_array_items_and_shared_fields() {
        let rules = vec![
            rule(
                "whole",
                "/data/object",
                Condition::Exists(true),
                Action::Deliver,
            ),
            rule(
                "inner",
                "/data/object/customer",
                Condition::Equals(Key::of(&json!("cus_1"))),
                Action::Ignore,
            ),
            rule(
                "same-field",
                "/data/object/customer",
                Condition::Prefix("cus_".into()),
                Action::Ignore,
            ),
            rule(
                "item",
                "/items/1/id",
                Condition::Equals(Key::of(&json!(7))),
                Action::Ignore,
            ),
            rule(
                "leading-zero",
                "/items/01",
                Condition::Exists(true),
                Action::Ignore,
            ),
            rule("escaped", "/a~1b", Condition::Exists(true), Action::Ignore),
        ];
        let filters = Filters::new(rules);
        let body = br#"{"items":[{"id":1},{"id":7}],"skip":{"deep":[1,2,{"x":"y"}]},
            "data":{"object":{"customer":"cus_1","n":1}},"a\/b":true}"#;
        let verdicts: Vec<bool> = filters.explain(body).into_iter().map(|(h, _)| h).collect();
        assert_eq!(verdicts, vec![true, true, true, true, false, true]);
        let values = filters.explain(body);
        assert_eq!(values[0].1, Some(json!({"customer": "cus_1", "n": 1})));
        assert_eq!(values[3].1, Some(json!(7)));
        // A later duplicate member wins, as it does for serde_json's Value.
        let twice = br#"{"data":{"object":{"customer":"cus_2","customer":"cus_1"}}}"#;
        assert!(filters.explain(twice)[1].0);
        // Broken JSON after the member has no fields at all.
        let broken = br#"{"data":{"object":{"customer":"cus_1"}}, oops"#;
        assert!(filters.explain(broken).iter().all(|(_, v)| v.is_none()));
    }
}
