//! Which list shard a key lives on: a stable hash of the key, so every
//! report of a key, from any object, reaches the same shard.

use crate::limits::{LIST_SHARDS_DEFAULT, LIST_SHARDS_MAX};

/// `BATON_LIST_SHARDS`: 1 to [`LIST_SHARDS_MAX`], default
/// [`LIST_SHARDS_DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardCount(u32);

impl Default for ShardCount {
    fn default() -> Self {
        ShardCount(LIST_SHARDS_DEFAULT)
    }
}

impl ShardCount {
    /// The variable's value (`None`: unset), or the operator's error
    /// naming it.
    pub fn parse(text: Option<&str>) -> Result<ShardCount, String> {
        let Some(text) = text else {
            return Ok(ShardCount::default());
        };
        text.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=LIST_SHARDS_MAX).contains(n))
            .map(ShardCount)
            .ok_or_else(|| {
                format!(
                    "Baton configuration: BATON_LIST_SHARDS must be an integer from 1 to \
                     {LIST_SHARDS_MAX} (got {text:?})"
                )
            })
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// The shard of `key` among `shards`: FNV-1a (64 bits) of its UTF-8 bytes,
/// modulo the count. Fixed forever: a key's reports must keep reaching the
/// shard that lists it (changing `BATON_LIST_SHARDS` re-homes keys, see
/// the README).
pub fn shard_of(key: &str, shards: ShardCount) -> u32 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = key
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    (hash % u64::from(shards.get())) as u32
}

/// The name of shard `index`'s object (`idFromName`).
pub fn shard_name(index: u32) -> String {
    format!("baton-list-{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_refused_outside_its_bounds_naming_the_variable() {
        assert_eq!(ShardCount::parse(None).unwrap().get(), 16);
        assert_eq!(ShardCount::parse(Some(" 256 ")).unwrap().get(), 256);
        assert_eq!(ShardCount::parse(Some("1")).unwrap().get(), 1);
        for bad in ["0", "257", "-1", "1.5", "", "many"] {
            let message = ShardCount::parse(Some(bad)).unwrap_err();
            assert!(message.contains("BATON_LIST_SHARDS"), "{message}");
        }
    }

    #[test]
    fn a_key_always_maps_to_the_same_shard_and_keys_spread() {
        let sixteen = ShardCount::parse(Some("16")).unwrap();
        // Fixed values: a change to the hash would strand listed keys.
        assert_eq!(shard_of("a", sixteen), 12);
        assert_eq!(shard_of("", ShardCount(1)), 0);
        let mut counts = [0u32; 16];
        for i in 0..16_000 {
            counts[shard_of(&format!("key-{i}"), sixteen) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&n| (800..1200).contains(&n)),
            "{counts:?}"
        );
    }
}
