//! `command.rs`'s tests kept apart (that file holds the body table and
//! the parsing): a list's query, and the body table against the method
//! table.

use super::*;
use crate::edge::busy::ListRequest;
use crate::edge::health::State;
use crate::edge::ListCall;

fn list(operation: Operation, query: &str) -> Result<Command, HttpError> {
    let fields = query_fields(query)?;
    Command::parse(operation, None, Some(fields))
}

#[test]
fn a_list_reads_its_cursor_and_limit_from_the_query() {
    let Command::List(ListCall::Keys(ListRequest {
        cursor,
        limit,
        state,
    })) = list(
        Operation::KeyList,
        "limit=20&cursor=AWth%2Bb&state=at_capacity",
    )
    .unwrap()
    else {
        panic!("a key list");
    };
    assert_eq!(cursor.as_deref(), Some("AWth+b"));
    assert_eq!(limit.map(|l| l.get()), Some(20));
    assert_eq!(state, Some(State::AtCapacity));
    let Command::List(ListCall::Groups(request)) = list(Operation::GroupList, "").unwrap() else {
        panic!("a group list");
    };
    assert_eq!(
        request,
        ListRequest {
            cursor: None,
            limit: None,
            state: None,
        }
    );
}

#[test]
fn a_bad_query_is_refused_naming_the_field() {
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("limit=ten", "limit"),
        ("limit=1.5", "limit"),
        ("page=2", "page"),
        ("limit=1&limit=2", "query"),
        ("cursor=%zz", "query"),
        (
            "state=stuck",
            "state must be one of paused, stalled, backlogged",
        ),
        ("state=", "state"),
    ] {
        match list(Operation::KeyList, query) {
            Err(HttpError::BadInput(error)) => {
                assert!(
                    error.message().contains(field),
                    "{query}: {}",
                    error.message()
                )
            }
            other => panic!("{query}: {other:?}"),
        }
    }
}

/// The body table (`command.rs`) names every operation of the method table:
/// its concept (`key`, `group`, `bucket`, `run`, `debounce`) and its
/// action (the route's last segment; `inspect` for a GET of one, `list`
/// for a GET of all), so a new row cannot be left out of it.
#[test]
fn the_body_table_names_every_operation() {
    const CONCEPTS: [(&str, &str); 5] = [
        ("keys", "key"),
        ("groups", "group"),
        ("buckets", "bucket"),
        ("runs", "run"),
        ("debounce", "debounce"),
    ];
    let rows: Vec<(Vec<&str>, Vec<&str>)> = include_str!("command.rs")
        .lines()
        .filter_map(|line| line.strip_prefix("//! | "))
        .filter_map(|row| row.split(" |").next())
        .map(|cell| {
            let cell = cell.split(" (").next().unwrap_or(cell);
            let words = cell.split([' ', ',', '/']).filter(|w| !w.is_empty());
            words.partition(|w| CONCEPTS.iter().any(|(_, c)| c == w))
        })
        .collect();
    for operation in Operation::ALL {
        let (verb, path, _) = operation.route();
        let segments: Vec<&str> = path.split('/').skip(2).collect();
        let concept = CONCEPTS
            .iter()
            .find(|(segment, _)| *segment == segments[0])
            .map(|(_, concept)| *concept)
            .unwrap_or_else(|| panic!("{operation:?}: a new concept for the test"));
        let last = *segments.last().expect("a route has a path");
        let action = match (segments.len(), last.starts_with('{'), verb) {
            (1, _, _) => "list",
            (_, true, crate::edge::http::Method::Get) => "inspect",
            (_, true, _) => concept,
            (_, false, _) => last,
        };
        let named = rows.iter().any(|(concepts, actions)| {
            concepts.contains(&concept)
                && (actions.contains(&action) || (actions.is_empty() && action == concept))
        });
        assert!(
            named,
            "{operation:?} ({concept} {action}) has no row in the body table"
        );
    }
}
