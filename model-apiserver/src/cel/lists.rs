//! `library.Lists` (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on lists),
//! `library.Regex` (`find`, `findAll` on strings) and cel-go's `ext.Sets` (`sets.contains`,
//! `sets.equivalent`, `sets.intersects`).
//!
//! The list functions are member overloads on `list`, so `indexOf` and `lastIndexOf` stand beside
//! the strings extension's overloads on `string` (the receiver picks one). Elements are compared
//! as the crate's [`Value`]s, which follow CEL's equality and ordering across numeric types.

use std::cmp::Ordering;

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::{Env, Value};
use regex::Regex;

use super::library::{DeclarationError, error, overload};

/// The elements of a list argument.
fn items<'a>(list: &'a Value, function: &str) -> Result<&'a [Value], cel::ExecutionError> {
    match list {
        Value::List(items) => Ok(items),
        other => Err(error(function, format!("no such overload: {} is not a list", other.type_of()))),
    }
}

/// `a` against `b`, or the error of two values CEL does not order.
fn compare(a: &Value, b: &Value) -> Result<Ordering, cel::ExecutionError> {
    a.partial_cmp(b).ok_or_else(|| cel::ExecutionError::ValuesNotComparable(a.clone(), b.clone()))
}

overload! {
    fn is_sorted(list: Value) -> bool {
        for pair in items(&list, "isSorted")?.windows(2) {
            if compare(&pair[0], &pair[1])? == Ordering::Greater {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

overload! {
    /// The sum of ints, uints, doubles or durations (`0` for an empty list, as for an empty
    /// `list(int)`).
    fn sum(list: Value) -> Value {
        let items = items(&list, "sum")?;
        let overflow = || error("sum", "integer overflow");
        let Some(first) = items.first() else { return Ok(Value::Int(0)) };
        let mut total = first.clone();
        for item in &items[1..] {
            total = match (&total, item) {
                (Value::Int(a), Value::Int(b)) => Value::Int(a.checked_add(*b).ok_or_else(overflow)?),
                (Value::UInt(a), Value::UInt(b)) => Value::UInt(a.checked_add(*b).ok_or_else(overflow)?),
                (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
                (Value::Duration(a), Value::Duration(b)) => {
                    Value::Duration(a.checked_add(b).ok_or_else(|| error("sum", "duration overflow"))?)
                }
                (a, b) => {
                    return Err(error("sum", format!("no such overload: {} + {}", a.type_of(), b.type_of())));
                }
            };
        }
        Ok(total)
    }
}

/// The element `prefer` picks over the others (`min` or `max`), an error on an empty list.
fn extreme(list: &Value, function: &str, prefer: Ordering) -> Result<Value, cel::ExecutionError> {
    let mut best: Option<&Value> = None;
    for item in items(list, function)? {
        match best {
            Some(b) if compare(item, b)? != prefer => {}
            _ => best = Some(item),
        }
    }
    best.cloned().ok_or_else(|| error(function, format!("{function} called on empty list")))
}

overload! {
    fn min(list: Value) -> Value {
        extreme(&list, "min", Ordering::Less)
    }
}

overload! {
    fn max(list: Value) -> Value {
        extreme(&list, "max", Ordering::Greater)
    }
}

overload! {
    fn index_of(list: Value, item: Value) -> i64 {
        Ok(items(&list, "indexOf")?.iter().position(|v| *v == item).map_or(-1, |i| i as i64))
    }
}

overload! {
    fn last_index_of(list: Value, item: Value) -> i64 {
        Ok(items(&list, "lastIndexOf")?.iter().rposition(|v| *v == item).map_or(-1, |i| i as i64))
    }
}

/// `regexp.Compile`, with upstream's error.
fn regex(pattern: &str, function: &str) -> Result<Regex, cel::ExecutionError> {
    Regex::new(pattern).map_err(|e| error(function, format!("Illegal regex: {e}")))
}

overload! {
    /// The first match, `''` if none.
    fn find(s: String, pattern: String) -> String {
        Ok(regex(&pattern, "find")?.find(&s).map_or(String::new(), |m| m.as_str().to_owned()))
    }
}

/// Go's `FindAllString(s, n)`: every match, at most `n` if `n >= 0`.
fn find_all_of(s: &str, pattern: &str, n: i64) -> Result<Vec<String>, cel::ExecutionError> {
    let re = regex(pattern, "findAll")?;
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    Ok(re.find_iter(s).take(limit).map(|m| m.as_str().to_owned()).collect())
}

overload! {
    fn find_all(s: String, pattern: String) -> Vec<String> {
        find_all_of(&s, &pattern, -1)
    }
}

overload! {
    fn find_all_n(s: String, pattern: String, n: i64) -> Vec<String> {
        find_all_of(&s, &pattern, n)
    }
}

overload! {
    /// `sets.contains(a, b)`: every element of `b` is in `a`.
    fn sets_contains(a: Value, b: Value) -> bool {
        let a = items(&a, "sets.contains")?;
        Ok(items(&b, "sets.contains")?.iter().all(|x| a.contains(x)))
    }
}

overload! {
    /// `sets.equivalent(a, b)`: each contains the other.
    fn sets_equivalent(a: Value, b: Value) -> bool {
        let (a, b) = (items(&a, "sets.equivalent")?, items(&b, "sets.equivalent")?);
        Ok(a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x)))
    }
}

overload! {
    /// `sets.intersects(a, b)`: an element in both.
    fn sets_intersects(a: Value, b: Value) -> bool {
        let a = items(&a, "sets.intersects")?;
        Ok(items(&b, "sets.intersects")?.iter().any(|x| a.contains(x)))
    }
}

/// Declares the three libraries on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted_bool", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload("indexOf", "list_a_index_of_int", LIST_TYPE, vec![DYN_TYPE], index_of)?;
    env.add_member_overload(
        "lastIndexOf",
        "list_a_last_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload("find", "string_find_string", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload("findAll", "string_find_all_string", STRING_TYPE, vec![STRING_TYPE], find_all)?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    env.add_overload("sets.contains", "list_sets_contains_list", vec![LIST_TYPE, LIST_TYPE], sets_contains)?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_intersects,
    )?;
    Ok(())
}
