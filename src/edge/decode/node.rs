//! The `Deserializer` behind [`super::decode`]: [`Node`], one value of the
//! input tree and the name it goes by in refusals, with the accessors that
//! walk a struct's fields, a free-form object's entries and an array's
//! items. Apart from the entry points (`decode/mod.rs`) because it is the
//! machinery, not the rules: how a refusal is named is stated there, in
//! the module's header, and this only carries it out.

use super::Refusal;
use crate::error::BatonError;
use crate::limits::HTTP_ECHO_CHARS_MAX;
use serde::de::{self, Deserializer, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

/// A caller's text, cut to [`HTTP_ECHO_CHARS_MAX`] characters for a message.
fn echo(text: &str) -> String {
    match text.char_indices().nth(HTTP_ECHO_CHARS_MAX) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// One value of the input tree, and the name it goes by in refusals.
pub(super) struct Node<'a> {
    pub(super) value: &'a Value,
    pub(super) name: &'static str,
    /// At the root of an HTTP request: the field taken from the path.
    pub(super) path: Option<(&'static str, &'a Value)>,
}

impl<'a> Node<'a> {
    /// `null` is an absent value; anything else is the wrong type.
    fn refuse(&self, expected: &'static str) -> Refusal {
        match self.value {
            Value::Null => Refusal::Missing,
            _ => Refusal::WrongType(expected),
        }
    }

    /// A struct's fields present in the input, in declaration order, or the
    /// refusal of an input that is no object. At an HTTP request's root the
    /// path's field comes first, and a field the struct does not know is
    /// refused after it ([`Fields::then`]): the path is checked before the
    /// body, by the one decode (the router does not check it apart). Not
    /// generic, and never inlined: the one copy serves every request type's
    /// `deserialize_struct` (each would otherwise carry its own, in the
    /// deployed WASM).
    #[inline(never)]
    fn struct_fields(&self, fields: &'static [&'static str]) -> Result<Fields<'a>, Refusal> {
        let Value::Object(present) = self.value else {
            return Err(self.refuse("an object"));
        };
        let path = self.path.filter(|(field, _)| fields.contains(field));
        let mut ordered = Vec::with_capacity(fields.len());
        ordered.extend(path);
        let then = self.unknown_field(present, fields);
        if then.is_none() {
            for field in fields {
                if path.is_some_and(|(path_field, _)| path_field == *field) {
                    continue;
                }
                if let Some(value) = present.get(*field) {
                    ordered.push((*field, value));
                }
            }
        }
        Ok(Fields {
            fields: ordered.into_iter(),
            value: None,
            then,
        })
    }

    fn unknown_field(
        &self,
        fields: &Map<String, Value>,
        accepted: &[&'static str],
    ) -> Option<Refusal> {
        let path_field = self.path.map(|(field, _)| field);
        let accepted: Vec<&str> = accepted
            .iter()
            .copied()
            .filter(|f| Some(*f) != path_field)
            .collect();
        // The first in name order, whatever order the caller wrote them in.
        let unknown = fields
            .keys()
            .filter(|k| !accepted.contains(&k.as_str()))
            .min()?;
        let hint = match path_field {
            Some(field) if field == unknown => format!(" (the {field} comes from the path)"),
            _ => String::new(),
        };
        let accepted = if accepted.is_empty() {
            "none".to_owned()
        } else {
            accepted.join(", ")
        };
        Some(Refusal::Named(BatonError::Invalid {
            field: self.name,
            reason: format!(
                "has an unknown field {:?}{hint}; accepted fields: {accepted}",
                echo(unknown)
            ),
        }))
    }
}

/// A whole JSON number as an integer, if it is one.
fn integer(value: &Value) -> Option<i128> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(64))
                    .map(|f| f as i128)
            }),
        _ => None,
    }
}

macro_rules! integers {
    ($($method:ident => $visit:ident: $t:ty),*) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
            if !self.value.is_number() {
                return Err(self.refuse("a number"));
            }
            let value = integer(self.value)
                .and_then(|i| <$t>::try_from(i).ok())
                .ok_or_else(|| Refusal::Invalid(format!(
                    "must be an integer from {} to {}", <$t>::MIN, <$t>::MAX
                )))?;
            visitor.$visit(value)
        }
    )*};
}

impl<'a> Deserializer<'a> for Node<'a> {
    type Error = Refusal;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(_) => self.deserialize_seq(visitor),
            Value::Object(_) => self.deserialize_map(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value {
            Value::Bool(b) => visitor.visit_bool(*b),
            _ => Err(self.refuse("a boolean")),
        }
    }

    integers!(
        deserialize_i8 => visit_i8: i8,
        deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32,
        deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64
    );

    fn deserialize_f32<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value.as_f64() {
            Some(f) => visitor.visit_f64(f),
            None => Err(self.refuse("a number")),
        }
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value {
            Value::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(self.refuse("a string")),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, _: V) -> Result<V::Value, Refusal> {
        Err(self.refuse("bytes"))
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, _: V) -> Result<V::Value, Refusal> {
        Err(self.refuse("bytes"))
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            _ => Err(Refusal::WrongType("null")),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value {
            Value::Array(items) => visitor.visit_seq(Items {
                items: items.iter(),
                name: self.name,
            }),
            _ => Err(self.refuse("an array")),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _: usize, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        self.deserialize_seq(visitor)
    }

    /// A free-form object (a `serde_json::Value` or a map field): its entries
    /// as they are, refusals naming the object's field.
    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.value {
            Value::Object(fields) => visitor.visit_map(Entries {
                entries: fields.iter(),
                value: None,
                name: self.name,
            }),
            _ => Err(self.refuse("an object")),
        }
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        visitor.visit_map(self.struct_fields(fields)?)
    }

    /// Enums travel as their variant's name (`"trailing"`): unit variants only.
    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        match self.value {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            _ => Err(self.refuse("a string")),
        }
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Refusal> {
        visitor.visit_unit()
    }
}

/// A struct's known fields, in declaration order, each refusal named by it.
struct Fields<'a> {
    fields: std::vec::IntoIter<(&'static str, &'a Value)>,
    value: Option<(&'static str, &'a Value)>,
    /// The refusal of a field the struct does not know, once the path's
    /// field (the only one read then) has been read.
    then: Option<Refusal>,
}

impl<'a> de::MapAccess<'a> for Fields<'a> {
    type Error = Refusal;

    fn next_key_seed<K: de::DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refusal> {
        let Some((field, value)) = self.fields.next() else {
            return self.then.take().map_or(Ok(None), Err);
        };
        self.value = Some((field, value));
        seed.deserialize(field.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'a>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Refusal> {
        let (field, value) = self.value.take().expect("a key comes before its value");
        seed.deserialize(Node {
            value,
            name: field,
            path: None,
        })
        .map_err(|refusal| Refusal::Named(refusal.named(field)))
    }
}

/// A free-form object's entries.
struct Entries<'a> {
    entries: serde_json::map::Iter<'a>,
    value: Option<&'a Value>,
    name: &'static str,
}

impl<'a> de::MapAccess<'a> for Entries<'a> {
    type Error = Refusal;

    fn next_key_seed<K: de::DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refusal> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(key.as_str().into_deserializer()).map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'a>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Refusal> {
        let value = self.value.take().expect("a key comes before its value");
        seed.deserialize(Node {
            value,
            name: self.name,
            path: None,
        })
    }
}

/// An array's items; a refusal names the array's field.
struct Items<'a> {
    items: std::slice::Iter<'a, Value>,
    name: &'static str,
}

impl<'a> de::SeqAccess<'a> for Items<'a> {
    type Error = Refusal;

    fn next_element_seed<T: de::DeserializeSeed<'a>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Refusal> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        seed.deserialize(Node {
            value,
            name: self.name,
            path: None,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}
