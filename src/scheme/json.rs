//! Values at a few JSON pointers (RFC 6901), read from a body in one pass
//! without building the document.
//!
//! Schemes take an event id or type from the JSON body once the signature
//! holds. Parsing the body into a `serde_json::Value` for that would allocate
//! every key and string in it; [`json_fields`] instead drives serde_json's
//! deserializer over the body, descends only into the members and elements
//! that lie on a requested pointer, and checks and skips everything else.
//! A string found at a pointer is borrowed from the body unless it holds
//! escapes.
//!
//! The answers are those of `serde_json::from_slice::<Value>(body)` followed
//! by `Value::pointer`: the whole body must be JSON (a value, then nothing but
//! whitespace), skipped parts are checked as strictly as parsed ones (UTF-8,
//! escapes, number range), serde_json's nesting limit applies, and a repeated
//! key keeps its last value.
//!
//! Everything here takes untrusted bytes and answers with `Option`: no input
//! can make it panic, and nesting is bounded by serde_json's limit, so no
//! input can exhaust the stack either.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

/// A pointer that finds nothing (it does not start with `/`), for a slot
/// that has no pointer to follow.
pub(crate) const NOWHERE: &str = "-";

/// What a body holds at one pointer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Field<'a> {
    /// Nothing: a member or element on the way is absent, or the pointer
    /// goes through a value that is not an object or array.
    Missing,
    Null,
    Bool(bool),
    /// The number as serde_json parses it into a `Value`.
    Number(Number),
    /// A string: borrowed from the body, or decoded when it holds escapes.
    Str(Cow<'a, str>),
    /// An array, whose elements are not kept.
    Array,
    /// An object, whose members are not kept.
    Object,
}

impl Field<'_> {
    /// An event id: a non-empty string as it is, a number as its decimal
    /// text (serde_json's rendering, e.g. `42`, `1.5`, `1000.0` for `1e3`).
    /// Empty strings count as absent: an empty id cannot key a nonce.
    pub(crate) fn id(self) -> Option<String> {
        match self {
            Field::Str(s) if !s.is_empty() => Some(s.into_owned()),
            Field::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// A string, empty or not (event types are strings; anything else is
    /// treated as absent).
    pub(crate) fn str(self) -> Option<String> {
        match self {
            Field::Str(s) => Some(s.into_owned()),
            _ => None,
        }
    }

    /// The string, borrowed, when the value is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// The values at `pointers` in `body`, in the same order, or `None` when the
/// body is not JSON (form-encoded bodies, truncated or over-nested ones).
///
/// Pointers follow `Value::pointer`: `""` is the whole document, `/a/b`
/// descends by member name (`~1` stands for `/`, `~0` for `~`) or by array
/// index (decimal, no sign, no leading zero), and text that does not start
/// with `/` finds nothing.
pub(crate) fn json_fields<'a, const N: usize>(
    body: &'a [u8],
    pointers: [&str; N],
) -> Option<[Field<'a>; N]> {
    let mut fields = std::array::from_fn(|_| Field::Missing);
    let routes = pointers.map(|p| (p.is_empty() || p.starts_with('/')).then_some(p));
    let mut de = serde_json::Deserializer::from_slice(body);
    Node {
        routes,
        fields: &mut fields,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(fields)
}

/// The next step of a pointer's remainder `rest` (which starts with `/`):
/// the member name or index it names, decoded, and what is left after it.
fn step(rest: &str) -> Option<(Cow<'_, str>, &str)> {
    let tail = rest.strip_prefix('/')?;
    let end = tail.find('/').unwrap_or(tail.len());
    let (raw, after) = tail.split_at(end);
    // The same decoding, in the same order, as `Value::pointer`.
    let token = if raw.contains('~') {
        Cow::Owned(raw.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(raw)
    };
    Some((token, after))
}

/// An array index as `Value::pointer` reads one: decimal digits, no sign,
/// no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// One value of the document, with what remains of each pointer below it
/// (`None` for pointers that do not pass through it, `Some("")` for those
/// that end here).
struct Node<'p, 'f, 'a, const N: usize> {
    routes: [Option<&'p str>; N],
    fields: &'f mut [Field<'a>; N],
}

impl<'a, const N: usize> Node<'_, '_, 'a, N> {
    /// Records `field` for every pointer that ends at this value.
    fn found(&mut self, field: Field<'a>) {
        let mut ends = self
            .routes
            .iter()
            .zip(self.fields.iter_mut())
            .filter_map(|(route, slot)| (*route == Some("")).then_some(slot));
        let Some(mut last) = ends.next() else {
            return;
        };
        for slot in ends {
            *last = field.clone();
            last = slot;
        }
        // The last (usually the only) one takes the value itself.
        *last = field;
    }
}

impl<'de, const N: usize> DeserializeSeed<'de> for Node<'_, '_, 'de, N> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.routes.iter().all(Option::is_none) {
            deserializer.deserialize_any(Skip).map(|Skip| ())
        } else {
            deserializer.deserialize_any(self)
        }
    }
}

impl<'de, const N: usize> Visitor<'de> for Node<'_, '_, 'de, N> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(mut self) -> Result<(), E> {
        self.found(Field::Null);
        Ok(())
    }

    fn visit_bool<E>(mut self, v: bool) -> Result<(), E> {
        self.found(Field::Bool(v));
        Ok(())
    }

    fn visit_i64<E>(mut self, v: i64) -> Result<(), E> {
        self.found(Field::Number(v.into()));
        Ok(())
    }

    fn visit_u64<E>(mut self, v: u64) -> Result<(), E> {
        self.found(Field::Number(v.into()));
        Ok(())
    }

    fn visit_f64<E>(mut self, v: f64) -> Result<(), E> {
        // As `Value` does: a float that is not finite becomes null.
        self.found(Number::from_f64(v).map_or(Field::Null, Field::Number));
        Ok(())
    }

    fn visit_borrowed_str<E>(mut self, v: &'de str) -> Result<(), E> {
        self.found(Field::Str(Cow::Borrowed(v)));
        Ok(())
    }

    fn visit_str<E>(mut self, v: &str) -> Result<(), E> {
        self.found(Field::Str(Cow::Owned(v.to_owned())));
        Ok(())
    }

    fn visit_string<E>(mut self, v: String) -> Result<(), E> {
        self.found(Field::Str(Cow::Owned(v)));
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.found(Field::Array);
        let steps = self.routes.map(|r| {
            r.and_then(step)
                .and_then(|(t, after)| Some((index(&t)?, after)))
        });
        let mut at = 0usize;
        loop {
            let routes = steps.map(|s| s.and_then(|(i, after)| (i == at).then_some(after)));
            let more = if routes.iter().any(Option::is_some) {
                let node = Node {
                    routes,
                    fields: &mut *self.fields,
                };
                seq.next_element_seed(node)?.is_some()
            } else {
                seq.next_element::<Skip>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            at = at.saturating_add(1);
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.found(Field::Object);
        let steps = self.routes.map(|r| r.and_then(step));
        while let Some(routes) = map.next_key_seed(Key { steps: &steps })? {
            if routes.iter().all(Option::is_none) {
                map.next_value::<Skip>()?;
                continue;
            }
            // A repeated key replaces the earlier value, as in a `Value`:
            // forget what the earlier one held before reading this one.
            for (route, slot) in routes.iter().zip(self.fields.iter_mut()) {
                if route.is_some() {
                    *slot = Field::Missing;
                }
            }
            map.next_value_seed(Node {
                routes,
                fields: &mut *self.fields,
            })?;
        }
        Ok(())
    }
}

/// A member name, answered with the pointers that continue below it.
struct Key<'s, 'p, const N: usize> {
    steps: &'s [Option<(Cow<'p, str>, &'p str)>; N],
}

impl<'de, 'p, const N: usize> DeserializeSeed<'de> for Key<'_, 'p, N> {
    type Value = [Option<&'p str>; N];

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de, 'p, const N: usize> Visitor<'de> for Key<'_, 'p, N> {
    type Value = [Option<&'p str>; N];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.steps.each_ref().map(|s| match s {
            Some((token, after)) if token == v => Some(*after),
            _ => None,
        }))
    }
}

/// Any JSON value, checked as strictly as a `Value` parse checks it (UTF-8,
/// escapes, number range, nesting limit) but kept nowhere. Strings are
/// borrowed or decoded into the deserializer's scratch buffer, so nothing is
/// allocated per value.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Skip)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn owned(s: &str) -> Field<'static> {
        Field::Str(Cow::Owned(s.to_owned()))
    }

    fn num(text: &str) -> Field<'static> {
        Field::Number(text.parse().expect("test numbers are JSON numbers"))
    }

    /// What `Value::pointer` finds, as a [`Field`]: the reference answer.
    fn reference(body: &[u8], pointers: &[&str]) -> Option<Vec<Field<'static>>> {
        let json: Value = serde_json::from_slice(body).ok()?;
        Some(
            pointers
                .iter()
                .map(|p| match json.pointer(p) {
                    None => Field::Missing,
                    Some(Value::Null) => Field::Null,
                    Some(Value::Bool(b)) => Field::Bool(*b),
                    Some(Value::Number(n)) => Field::Number(n.clone()),
                    Some(Value::String(s)) => owned(s),
                    Some(Value::Array(_)) => Field::Array,
                    Some(Value::Object(_)) => Field::Object,
                })
                .collect(),
        )
    }

    /// The event id as schemes read it from a parsed `Value` before.
    fn value_id(json: &Value, pointer: &str) -> Option<String> {
        match json.pointer(pointer)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// The event type as schemes read it from a parsed `Value` before.
    fn value_str(json: &Value, pointer: &str) -> Option<String> {
        match json.pointer(pointer)? {
            Value::String(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// Asserts that the reader agrees with `Value` on `body` at `pointers`,
    /// fields and id/type readings alike.
    fn agrees(body: &[u8], pointers: [&str; 4]) {
        let got = json_fields(body, pointers);
        let want = reference(body, &pointers);
        let shown = String::from_utf8_lossy(body);
        assert_eq!(
            got.as_ref().map(|f| f.to_vec()),
            want,
            "{shown} at {pointers:?}"
        );
        if let (Some(fields), Ok(json)) = (got, serde_json::from_slice::<Value>(body)) {
            for (field, pointer) in fields.into_iter().zip(pointers) {
                assert_eq!(
                    field.clone().id(),
                    value_id(&json, pointer),
                    "{shown} id at {pointer}"
                );
                assert_eq!(
                    field.str(),
                    value_str(&json, pointer),
                    "{shown} str at {pointer}"
                );
            }
        }
    }

    #[test]
    fn nested_pointers_and_escapes() {
        let body = br#"{"a":{"b":{"c":"deep"}},"m~n":1,"x/y":"slash","\u00e9t\u00e9":"summer",
            "q":"say \"hi\"","u":"caf\u00e9","":{"":"empty names"}}"#;
        let [deep, tilde, slash, summer, quoted, accented, empty, mid] = json_fields(
            body,
            [
                "/a/b/c",
                "/m~0n",
                "/x~1y",
                "/\u{e9}t\u{e9}",
                "/q",
                "/u",
                "//",
                "/a/b",
            ],
        )
        .expect("valid JSON");
        // Plain strings are borrowed from the body; escaped ones decoded.
        assert!(
            matches!(deep, Field::Str(Cow::Borrowed("deep"))),
            "{deep:?}"
        );
        assert_eq!(tilde, num("1"));
        assert_eq!(slash, owned("slash"));
        assert_eq!(summer, owned("summer"));
        assert!(matches!(&quoted, Field::Str(Cow::Owned(s)) if s == "say \"hi\""));
        assert_eq!(accented, owned("caf\u{e9}"));
        assert_eq!(empty, owned("empty names"));
        assert_eq!(mid, Field::Object);
        let [missing, whole, no_slash, same] =
            json_fields(body, ["/a/b/d", "", "a", "/a/b/c"]).expect("valid JSON");
        assert_eq!(missing, Field::Missing);
        assert_eq!(whole, Field::Object);
        assert_eq!(no_slash, Field::Missing);
        assert_eq!(same, owned("deep"));
    }

    #[test]
    fn the_same_pointer_twice_is_answered_twice() {
        let fields = json_fields(br#"{"id":"evt_\"1"}"#, ["/id", "/id", "/id"]);
        assert_eq!(
            fields,
            Some([owned("evt_\"1"), owned("evt_\"1"), owned("evt_\"1")])
        );
    }

    #[test]
    fn array_index_pointers() {
        let body = br#"{"items":[{"id":"i0"},{"id":"i1"}],"m":[[1,2],[3]],"n":{"0":"named"}}"#;
        let got = json_fields(
            body,
            [
                "/items/0/id",
                "/items/1/id",
                "/items/2/id",
                "/items/01/id",
                "/items/+1/id",
                "/items/-/id",
                "/m/1/0",
                "/items/id",
                "/n/0",
                "/m/0",
            ],
        );
        assert_eq!(
            got,
            Some([
                owned("i0"),
                owned("i1"),
                Field::Missing,
                Field::Missing,
                Field::Missing,
                Field::Missing,
                num("3"),
                Field::Missing,
                owned("named"),
                Field::Array,
            ])
        );
    }

    #[test]
    fn numbers_read_as_ids_render_as_serde_json_does() {
        for (text, id) in [
            ("42", "42"),
            ("-7", "-7"),
            ("0", "0"),
            ("1.5", "1.5"),
            ("1e3", "1000.0"),
            ("2.5E-3", "0.0025"),
            ("-1.25e+2", "-125.0"),
            ("18446744073709551615", "18446744073709551615"),
            ("-9223372036854775808", "-9223372036854775808"),
        ] {
            let body = format!(r#"{{"n":{text}}}"#);
            let [field] = json_fields(body.as_bytes(), ["/n"]).expect("valid JSON");
            assert_eq!(field.clone().id().as_deref(), Some(id), "{text}");
            assert_eq!(field.str(), None, "{text}");
            agrees(body.as_bytes(), ["/n", "/n/0", "", "/m"]);
        }
        for text in [
            "-0",
            "0.0",
            "18446744073709551616",
            "-9223372036854775809",
            "1e308",
            "123456789012345678901234567890",
            "0.1e-400",
        ] {
            agrees(
                format!(r#"{{"n":{text}}}"#).as_bytes(),
                ["/n", "", "/m", "/n/x"],
            );
        }
    }

    #[test]
    fn ids_and_types_keep_their_rules() {
        let body = br#"{"id":"evt_1","n":42,"e":"","o":{},"t":7,"z":null,"b":true}"#;
        let [id, n, e, o, t, z, b, missing] = json_fields(
            body,
            ["/id", "/n", "/e", "/o", "/t", "/z", "/b", "/missing"],
        )
        .expect("valid JSON");
        assert_eq!(id.clone().id().as_deref(), Some("evt_1"));
        assert_eq!(id.str().as_deref(), Some("evt_1"));
        assert_eq!(n.id().as_deref(), Some("42"));
        assert_eq!(e.clone().id(), None);
        assert_eq!(e.str().as_deref(), Some(""));
        assert_eq!(o.id(), None);
        assert_eq!(t.clone().str(), None);
        assert_eq!(t.as_str(), None);
        assert_eq!(z, Field::Null);
        assert_eq!(b, Field::Bool(true));
        assert_eq!(missing.id(), None);
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        for (body, pointer, want) in [
            (
                &br#"{"id":"first","id":"second"}"#[..],
                "/id",
                owned("second"),
            ),
            (br#"{"id":"first","x":1,"id":2}"#, "/id", num("2")),
            (br#"{"a":{"b":1},"a":{"c":2}}"#, "/a/b", Field::Missing),
            (br#"{"a":{"b":1},"a":{"c":2}}"#, "/a/c", num("2")),
            (br#"{"a":{"b":1},"a":7}"#, "/a/b", Field::Missing),
            (br#"{"a":[1],"a":{"0":"x"}}"#, "/a/0", owned("x")),
            (br#"{"a":{"b":1,"b":3}}"#, "/a/b", num("3")),
        ] {
            let [got] = json_fields(body, [pointer]).expect("valid JSON");
            assert_eq!(got, want, "{}", String::from_utf8_lossy(body));
            agrees(body, [pointer, "/a", "/id", ""]);
        }
    }

    #[test]
    fn bodies_that_are_not_json_give_none() {
        for body in [
            // A Slack slash command: form-encoded.
            &b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&text="[..],
            b"",
            b"   ",
            b"{",
            br#"{"id":"x"} x"#,
            br#"{"id":"x"}}"#,
            br#"{"id":"x",}"#,
            br#"{"id":"x"}{"id":"y"}"#,
            br#"{"id":'x'}"#,
            br#"{id:"x"}"#,
            // What is skipped is checked as strictly as what is read:
            // UTF-8, escapes, control characters, numbers and their range.
            b"{\"id\":\"x\",\"p\":\"\xff\"}",
            b"{\"id\":\"x\",\"\xff\":1}",
            br#"{"id":"x","p":"\ud800"}"#,
            br#"{"id":"x","p":"\q"}"#,
            b"{\"id\":\"x\",\"p\":\"a\nb\"}",
            br#"{"id":"x","p":1e400}"#,
            br#"{"id":"x","p":01}"#,
            br#"{"id":"x","p":[1,]}"#,
            br#"{"id":"x","p":nul}"#,
        ] {
            assert_eq!(
                json_fields(body, ["/id"]),
                None,
                "{}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(reference(body, &["/id"]), None);
        }
        // Whitespace around the value is fine.
        assert_eq!(
            json_fields(b" \n{\"id\":\"x\"}\r\n\t ", ["/id"]),
            Some([owned("x")])
        );
    }

    #[test]
    fn deep_nesting_gives_none_without_exhausting_the_stack() {
        let deep = |depth: usize| {
            let mut body = "[".repeat(depth);
            body.push_str(&"]".repeat(depth));
            body
        };
        // serde_json's limit: 127 levels nested, 128 refused.
        for (depth, ok) in [(10, true), (127, true), (128, false), (10_000, false)] {
            let body = deep(depth);
            let through = "/0".repeat(depth.min(200));
            for pointer in ["/id", through.as_str()] {
                let got = json_fields(body.as_bytes(), [pointer]);
                assert_eq!(got.is_some(), ok, "{depth}");
                assert_eq!(
                    got.is_some(),
                    reference(body.as_bytes(), &[pointer]).is_some()
                );
            }
            // Skipped nesting counts as much as nesting that is read.
            let wrapped = format!(r#"{{"id":"x","skipped":{}}}"#, deep(depth - 1));
            let got = json_fields(wrapped.as_bytes(), ["/id"]);
            assert_eq!(got.is_some(), ok, "{depth}");
            assert_eq!(
                got.is_some(),
                reference(wrapped.as_bytes(), &["/id"]).is_some()
            );
        }
        let objects = format!("{}1{}", r#"{"a":"#.repeat(10_000), "}".repeat(10_000));
        assert_eq!(json_fields(objects.as_bytes(), ["/a/a/a"]), None);
    }

    #[test]
    fn pointers_through_other_values_find_nothing() {
        let body = br#"{"a":"text","n":5,"z":null,"t":true,"l":[]}"#;
        let got = json_fields(body, ["/a/0", "/a/b", "/n/x", "/z/x", "/t/0", "/l/0"]);
        assert_eq!(got, Some(std::array::from_fn(|_| Field::Missing)));
        assert_eq!(
            json_fields(br#""evt_1""#, ["", "/x", "/0"]),
            Some([owned("evt_1"), Field::Missing, Field::Missing])
        );
        assert_eq!(
            json_fields(b"[\"a\",\"b\"]", ["/1", "/id"]),
            Some([owned("b"), Field::Missing])
        );
    }

    /// A small deterministic generator (xorshift64*), so the comparison
    /// below covers many documents and is the same on every run.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
            from[self.below(from.len())]
        }
    }

    /// Member names (as text, then as written in JSON) and the values
    /// documents are made of.
    const NAMES: [(&str, &str); 10] = [
        ("id", r#""id""#),
        ("type", r#""type""#),
        ("a", r#""a""#),
        ("a", r#""\u0061""#),
        ("", r#""""#),
        ("m~n", r#""m~n""#),
        ("x/y", r#""x\/y""#),
        ("\u{e9}", r#""\u00e9""#),
        ("0", r#""0""#),
        ("1", r#""1""#),
    ];
    const SCALARS: [&str; 22] = [
        "null",
        "true",
        "false",
        r#""""#,
        r#""evt_1""#,
        r#""say \"hi\"""#,
        r#""caf\u00e9""#,
        r#""\ud83d\ude00""#,
        "0",
        "-0",
        "42",
        "-7",
        "1.5",
        "1e3",
        "1E-2",
        "-2.5e+2",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "0.30000000000000004",
        "5e-324",
    ];
    const SPACE: [&str; 4] = ["", " ", "\n", "\t "];

    fn document(g: &mut Gen, depth: usize, out: &mut String) {
        out.push_str(g.pick(&SPACE));
        // Mostly objects at the top, as webhook bodies are.
        let kind = match depth {
            0 => 0,
            4 => [2, 2, 2, 4][g.below(4)],
            _ => g.below(5),
        };
        match kind {
            0 | 1 => out.push_str(g.pick(&SCALARS)),
            2 | 3 => {
                out.push('{');
                for i in 0..g.below(6) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(NAMES[g.below(NAMES.len())].1);
                    out.push(':');
                    document(g, depth - 1, out);
                }
                out.push('}');
            }
            _ => {
                out.push('[');
                for i in 0..g.below(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    document(g, depth - 1, out);
                }
                out.push(']');
            }
        }
        out.push_str(g.pick(&SPACE));
    }

    fn pointer(g: &mut Gen) -> String {
        const STEPS: [&str; 9] = ["0", "1", "2", "01", "+1", "-", "m~1n", "x/y", "~"];
        if g.below(20) == 0 {
            return g.pick(&["", "id", "/"]).to_owned();
        }
        let mut out = String::new();
        for _ in 0..=g.below(3) {
            out.push('/');
            let step = if g.below(3) != 0 {
                NAMES[g.below(NAMES.len())].0
            } else {
                g.pick(&STEPS)
            };
            out.push_str(&step.replace('~', "~0").replace('/', "~1"));
        }
        out
    }

    #[test]
    fn agrees_with_value_pointer_on_generated_documents() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let mut some = 0;
        for _ in 0..3000 {
            let mut doc = String::new();
            document(&mut g, 4, &mut doc);
            let pointers = [
                pointer(&mut g),
                pointer(&mut g),
                pointer(&mut g),
                pointer(&mut g),
            ];
            let pointers = pointers.each_ref().map(String::as_str);
            agrees(doc.as_bytes(), pointers);
            let found = json_fields(doc.as_bytes(), pointers).unwrap_or_else(|| {
                panic!("generated documents are JSON: {doc}");
            });
            some += found.iter().filter(|f| **f != Field::Missing).count();
            // Broken versions of the same document: cut short, followed
            // by garbage, one byte changed.
            let bytes = doc.as_bytes();
            let cut = g.below(bytes.len());
            agrees(&bytes[..cut], pointers);
            agrees(format!("{doc} x").as_bytes(), pointers);
            let mut changed = bytes.to_vec();
            let at = g.below(changed.len());
            let replacements = b"\xff{}[],:\"\\0ae-";
            changed[at] = replacements[g.below(replacements.len())];
            agrees(&changed, pointers);
        }
        // The generator reaches values, not only absences.
        assert!(some > 500, "{some}");
    }
}
