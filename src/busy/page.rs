//! Reading a list page by page (contract §10): the `limit`, the opaque
//! cursor, and the merge of the shards' pages into one.
//!
//! A list is ordered by key (or group), whichever shards hold it. A page
//! asks each shard for its next entries after the cursor ([`per_shard`]
//! of them), merges them by key, and answers them up to the first key
//! that some shard may not have answered all before: the smallest last
//! key among the shards that answered as many as they were asked. So a
//! page costs about `2 × limit` rows however many keys are listed, and the
//! cursor (the last key answered) means the same whatever the shard
//! count, so a page is never skipped or repeated by a resharding between
//! two reads.

use crate::error::{BatonError, Number};
use crate::limits::{IDENT_BYTES_MAX, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX};

/// A page's `limit`: 1 to [`LIST_LIMIT_MAX`], default [`LIST_LIMIT_DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLimit(u32);

impl Default for ListLimit {
    fn default() -> Self {
        ListLimit(LIST_LIMIT_DEFAULT)
    }
}

impl ListLimit {
    pub fn new(value: f64) -> Result<ListLimit, String> {
        if value.fract() != 0.0 || !(1.0..=f64::from(LIST_LIMIT_MAX)).contains(&value) {
            return Err(format!(
                "must be an integer from 1 to {LIST_LIMIT_MAX} (got {})",
                Number(value)
            ));
        }
        Ok(ListLimit(value as u32))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// Which list a cursor belongs to: a cursor of one is refused by the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Keys,
    Groups,
}

impl ListKind {
    fn tag(self) -> u8 {
        match self {
            ListKind::Keys => b'k',
            ListKind::Groups => b'g',
        }
    }
}

/// The cursor format's version, so a later format can tell an old cursor.
const CURSOR_VERSION: u8 = 1;

/// Where the next page starts: after this key (or group). Opaque to
/// callers: base64url of a version, the list's tag and the key's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub kind: ListKind,
    pub after: String,
}

impl Cursor {
    pub fn encode(&self) -> String {
        let mut bytes = vec![CURSOR_VERSION, self.kind.tag()];
        bytes.extend_from_slice(self.after.as_bytes());
        base64url(&bytes)
    }

    /// A cursor a page of list `kind` answered, or the refusal naming
    /// `cursor`: one that is not a cursor at all (malformed), or one of
    /// another list or format (foreign).
    pub fn decode(kind: ListKind, text: &str) -> Result<Cursor, BatonError> {
        let refuse = |reason: &str| BatonError::Invalid {
            field: "cursor",
            reason: reason.to_owned(),
        };
        let bytes = from_base64url(text).ok_or_else(|| {
            refuse("is not a cursor (pass back the `cursor` a page answered, or none)")
        })?;
        let (header, key) = bytes
            .split_at_checked(2)
            .ok_or_else(|| refuse("is not a cursor (too short)"))?;
        if header != [CURSOR_VERSION, kind.tag()] {
            let list = match kind {
                ListKind::Keys => "coordinatorList",
                ListKind::Groups => "serialList",
            };
            return Err(refuse(&format!("is not a cursor of {list}")));
        }
        let after = String::from_utf8(key.to_vec())
            .ok()
            .filter(|key| !key.is_empty() && key.len() <= IDENT_BYTES_MAX)
            .ok_or_else(|| refuse("is not a cursor (its position is not a key)"))?;
        Ok(Cursor { kind, after })
    }
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(BASE64URL[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn from_base64url(text: &str) -> Option<Vec<u8>> {
    // Longest cursor: the header and a key of the longest.
    if text.len() > (IDENT_BYTES_MAX + 2).div_ceil(3) * 4 || text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            let v = BASE64URL.iter().position(|x| x == c)? as u32;
            n |= v << (18 - 6 * i);
        }
        let produced = chunk.len() - 1;
        for i in 0..produced {
            out.push((n >> (16 - 8 * i)) as u8);
        }
        // Canonical only: the unused low bits of a short chunk are zero.
        if produced < 3 && n & ((1 << (8 * (3 - produced))) - 1) != 0 {
            return None;
        }
    }
    Some(out)
}

/// How many entries a page of `limit` asks each of `shards` shards for:
/// twice a fair share (keys spread evenly by their hash, so a shard's share
/// of the next `limit` keys rarely exceeds it), plus a few for small pages.
pub fn per_shard(limit: ListLimit, shards: u32) -> u32 {
    let limit = limit.get();
    if shards <= 1 {
        return limit;
    }
    (2 * limit).div_ceil(shards).saturating_add(4).min(limit)
}

/// One shard's answer: its entries after the cursor in key order, and
/// whether it answered as many as it was asked (so more may follow).
pub struct ShardPage<T> {
    pub entries: Vec<(String, T)>,
    pub full: bool,
}

/// The merged page: at most `limit` entries in key order, and whether
/// entries may follow the last (the page's cursor is then its last key).
/// A key two shards both answered (only after `BATON_LIST_SHARDS`
/// changed) is answered once, as the first shard in order holds it.
pub fn merge<T>(pages: Vec<ShardPage<T>>, limit: ListLimit) -> (Vec<(String, T)>, bool) {
    let boundary = pages
        .iter()
        .filter(|page| page.full)
        .filter_map(|page| page.entries.last().map(|(key, _)| key.clone()))
        .min();
    let mut all: Vec<(usize, String, T)> = pages
        .into_iter()
        .enumerate()
        .flat_map(|(shard, page)| {
            page.entries
                .into_iter()
                .map(move |(key, entry)| (shard, key, entry))
        })
        .filter(|(_, key, _)| boundary.as_ref().is_none_or(|b| key <= b))
        .collect();
    all.sort_by(|a, b| (&a.1, a.0).cmp(&(&b.1, b.0)));
    all.dedup_by(|later, first| later.1 == first.1);
    let limit = limit.get() as usize;
    let more = boundary.is_some() || all.len() > limit;
    all.truncate(limit);
    (
        all.into_iter()
            .map(|(_, key, entry)| (key, entry))
            .collect(),
        more,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_and_a_foreign_or_malformed_one_is_refused() {
        for key in ["a", "ключ/один", "x y\u{0}z", &"k".repeat(512)] {
            let cursor = Cursor {
                kind: ListKind::Keys,
                after: key.to_owned(),
            };
            let text = cursor.encode();
            assert!(text.bytes().all(|b| BASE64URL.contains(&b)), "{text}");
            assert_eq!(Cursor::decode(ListKind::Keys, &text).unwrap(), cursor);
            let foreign = Cursor::decode(ListKind::Groups, &text).unwrap_err();
            assert_eq!(foreign.field(), "cursor");
            assert!(foreign.message().contains("not a cursor of serialList"));
        }
        for bad in ["", "A", "!!!!", "AQ", "AWs", "abc$", "AWt="] {
            let error = Cursor::decode(ListKind::Keys, bad).unwrap_err();
            assert_eq!(error.field(), "cursor", "{bad}");
        }
        let long = base64url(&[&[1, b'k'][..], &[b'a'; 513]].concat());
        assert!(Cursor::decode(ListKind::Keys, &long).is_err());
    }

    #[test]
    fn the_limit_is_refused_outside_one_to_five_hundred() {
        assert_eq!(ListLimit::default().get(), 100);
        assert_eq!(ListLimit::new(500.0).unwrap().get(), 500);
        for bad in [0.0, 501.0, 1.5, -1.0, f64::NAN] {
            assert!(ListLimit::new(bad).is_err(), "{bad}");
        }
    }

    fn page(keys: &[&str], full: bool) -> ShardPage<()> {
        ShardPage {
            entries: keys.iter().map(|k| (k.to_string(), ())).collect(),
            full,
        }
    }

    #[test]
    fn the_merge_stops_where_a_full_shard_may_have_more() {
        let limit = ListLimit::new(10.0).unwrap();
        let (keys, more) = merge(
            vec![page(&["a", "d", "f"], true), page(&["b", "c", "g"], false)],
            limit,
        );
        let keys: Vec<_> = keys.into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b", "c", "d", "f"]);
        assert!(more);
        let (keys, more) = merge(vec![page(&["a"], false), page(&["b", "a"], false)], limit);
        assert_eq!(keys.len(), 2, "a key in two shards is answered once");
        assert!(!more);
        let (keys, more) = merge(
            vec![page(&["a", "b", "c"], false)],
            ListLimit::new(2.0).unwrap(),
        );
        assert_eq!(keys.len(), 2);
        assert!(more);
    }
}
