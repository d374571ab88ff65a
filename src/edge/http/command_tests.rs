//! `command.rs`'s tests kept apart: a list's query. (Its body table is
//! generated from the method table: `edge::body_table`.)

use super::*;
use crate::edge::busy::ListRequest;
use crate::edge::ListCall;
use crate::health::KeyState;

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
    assert_eq!(state, Some(KeyState::AtCapacity));
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
