//! cel-go's two-variable comprehensions (`ext.TwoVarComprehensions`, in kube-apiserver's base
//! environment since 1.32): `all(k, v, p)`, `exists(k, v, p)`, `existsOne(k, v, p)` on lists
//! (index, element) and maps (key, value), `transformList(k, v, [filter,] f)`,
//! `transformMap(k, v, [filter,] f)` and `transformMapEntry(k, v, [filter,] {..})`.
//!
//! The `cel` crate parses a comprehension's second variable but never binds it, so each form is
//! a macro expanding to a one-variable comprehension over the target's indices (a list) or
//! sorted keys (a map), with the second name read as `target[first]` wherever the body names
//! it (a nested comprehension that binds the same name shadows it). The target is evaluated once
//! per read of the second name: CEL has no side effects, so only the cost differs.

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, operators};
use cel::common::types::DYN_TYPE;
use cel::objects::{Key, Map};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{Env, ExecutionError, Value};

use super::library::{DeclarationError, error, overload};

/// The function the expansions iterate over: a list's indices, a map's keys in order.
const KEYS: &str = "@two_var_keys";
/// Builds a map from `[key, value]` pairs (`transformMap`).
const PAIRS: &str = "@two_var_pairs_to_map";
/// Merges single-entry maps, refusing a key twice (`transformMapEntry`).
const MERGE: &str = "@two_var_merge_maps";
/// The accumulator's name, as the standard macros name it.
const ACCU: &str = "@result";

/// What a comprehension computes.
#[derive(Clone, Copy)]
enum Form {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

impl Form {
    const ALL: [(Form, &'static str); 6] = [
        (Form::All, "all"),
        (Form::Exists, "exists"),
        (Form::ExistsOne, "existsOne"),
        (Form::TransformList, "transformList"),
        (Form::TransformMap, "transformMap"),
        (Form::TransformMapEntry, "transformMapEntry"),
    ];

    fn transforms(self) -> bool {
        matches!(self, Form::TransformList | Form::TransformMap | Form::TransformMapEntry)
    }
}

/// Declares the macros (3 arguments; the transforms also 4, with a filter) and their functions.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    for (form, name) in Form::ALL {
        env.add_macro(Macro::receiver(name, 3, move |h, t, a| expand(form, h, t, a).map(Some)))?;
        if form.transforms() {
            env.add_macro(Macro::receiver(name, 4, move |h, t, a| expand(form, h, t, a).map(Some)))?;
        }
    }
    env.add_overload(KEYS, "two_var_keys", vec![DYN_TYPE], keys)?;
    env.add_overload(PAIRS, "two_var_pairs_to_map", vec![DYN_TYPE], pairs_to_map)?;
    env.add_overload(MERGE, "two_var_merge_maps", vec![DYN_TYPE], merge_maps)?;
    Ok(())
}

fn call(h: &mut MacroExprHelper<'_>, function: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr { func_name: function.to_owned(), target: None, args }))
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_owned()))
}

fn name_of(h: &mut MacroExprHelper<'_>, expr: IdedExpr) -> Result<String, ParseError> {
    match expr.expr {
        Expr::Ident(name) => Ok(name),
        _ => Err(h.new_error(expr.id, "argument must be a simple name")),
    }
}

fn expand(
    form: Form,
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<IdedExpr, ParseError> {
    let Some(target) = target.take() else { unreachable!("a receiver macro has a target") };
    let body = args.pop().expect("arity checked");
    let filter = (args.len() == 3).then(|| args.pop().expect("arity checked"));
    let second = args.pop().expect("arity checked");
    let second = name_of(h, second)?;
    let first = args.pop().expect("arity checked");
    let first = name_of(h, first)?;
    let read = |h: &mut MacroExprHelper<'_>, e: IdedExpr| substitute(h, e, &first, &second, &target);
    let body = read(h, body);
    let filter = filter.map(|f| read(h, f));
    let accu = |h: &mut MacroExprHelper<'_>| ident(h, ACCU);
    let literal =
        |h: &mut MacroExprHelper<'_>, v: cel::common::ast::LiteralValue| h.next_expr(Expr::Literal(v));
    use cel::common::ast::LiteralValue as L;
    let (init, condition, step, result) = match form {
        Form::All | Form::Exists => {
            let all = matches!(form, Form::All);
            let init = literal(h, L::Boolean(all.into()));
            let a = accu(h);
            let going = if all { a } else { call(h, operators::LOGICAL_NOT, vec![a]) };
            let condition = call(h, operators::NOT_STRICTLY_FALSE, vec![going]);
            let a = accu(h);
            let op = if all { operators::LOGICAL_AND } else { operators::LOGICAL_OR };
            let step = call(h, op, vec![a, body]);
            (init, condition, step, accu(h))
        }
        Form::ExistsOne => {
            let init = literal(h, L::Int(0.into()));
            let condition = literal(h, L::Boolean(true.into()));
            let (a, one) = (accu(h), literal(h, L::Int(1.into())));
            let plus = call(h, operators::ADD, vec![a, one]);
            let a = accu(h);
            let step = call(h, operators::CONDITIONAL, vec![body, plus, a]);
            let (a, one) = (accu(h), literal(h, L::Int(1.into())));
            (init, condition, step, call(h, operators::EQUALS, vec![a, one]))
        }
        Form::TransformList | Form::TransformMap | Form::TransformMapEntry => {
            let init = h.next_expr(Expr::List(ListExpr::new(Vec::new())));
            let condition = literal(h, L::Boolean(true.into()));
            // Each element of the accumulated list: the value, a `[key, value]` pair, or an entry.
            let element = match form {
                Form::TransformMap => {
                    let key = ident(h, &first);
                    h.next_expr(Expr::List(ListExpr::new(vec![key, body])))
                }
                _ => body,
            };
            let one = h.next_expr(Expr::List(ListExpr::new(vec![element])));
            let a = accu(h);
            let append = call(h, operators::ADD, vec![a, one]);
            let step = match filter {
                Some(filter) => {
                    let a = accu(h);
                    call(h, operators::CONDITIONAL, vec![filter, append, a])
                }
                None => append,
            };
            let result = match form {
                Form::TransformMap => {
                    let a = accu(h);
                    call(h, PAIRS, vec![a])
                }
                Form::TransformMapEntry => {
                    let a = accu(h);
                    call(h, MERGE, vec![a])
                }
                _ => accu(h),
            };
            (init, condition, step, result)
        }
    };
    let range = call(h, KEYS, vec![target]);
    Ok(h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: first,
        iter_var2: None,
        accu_var: ACCU.to_owned(),
        accu_init: init,
        loop_cond: condition,
        loop_step: step,
        result,
    }))))
}

/// `e` with every free `second` read as `target[first]`.
fn substitute(
    h: &mut MacroExprHelper<'_>,
    e: IdedExpr,
    first: &str,
    second: &str,
    target: &IdedExpr,
) -> IdedExpr {
    let go = |h: &mut MacroExprHelper<'_>, e: IdedExpr| substitute(h, e, first, second, target);
    let IdedExpr { id, expr } = e;
    let expr = match expr {
        Expr::Ident(name) if name == second => {
            let key = ident(h, first);
            return call(h, operators::INDEX, vec![target.clone(), key]);
        }
        Expr::Call(CallExpr { func_name, target: receiver, args }) => Expr::Call(CallExpr {
            func_name,
            target: receiver.map(|r| Box::new(go(h, *r))),
            args: args.into_iter().map(|a| go(h, a)).collect(),
        }),
        Expr::Select(mut select) => {
            let operand = std::mem::take(&mut *select.operand);
            *select.operand = go(h, operand);
            Expr::Select(select)
        }
        Expr::List(list) => Expr::List(ListExpr {
            elements: list.elements.into_iter().map(|x| go(h, x)).collect(),
            optional_indices: list.optional_indices,
        }),
        Expr::Map(mut map) => {
            for entry in &mut map.entries {
                if let EntryExpr::MapEntry(e) = &mut entry.expr {
                    e.key = go(h, std::mem::take(&mut e.key));
                    e.value = go(h, std::mem::take(&mut e.value));
                }
            }
            Expr::Map(map)
        }
        Expr::Struct(mut strct) => {
            for entry in &mut strct.entries {
                if let EntryExpr::StructField(f) = &mut entry.expr {
                    f.value = go(h, std::mem::take(&mut f.value));
                }
            }
            Expr::Struct(strct)
        }
        Expr::Comprehension(mut c) => {
            c.iter_range = go(h, std::mem::take(&mut c.iter_range));
            c.accu_init = go(h, std::mem::take(&mut c.accu_init));
            // A nested comprehension that binds the name shadows it in its body.
            let shadowed =
                c.iter_var == second || c.accu_var == second || c.iter_var2.as_deref() == Some(second);
            if !shadowed {
                c.loop_cond = go(h, std::mem::take(&mut c.loop_cond));
                c.loop_step = go(h, std::mem::take(&mut c.loop_step));
                c.result = go(h, std::mem::take(&mut c.result));
            }
            Expr::Comprehension(c)
        }
        other => other,
    };
    IdedExpr { id, expr }
}

overload! {
    /// A list's indices, or a map's keys in order (a map of the crate has no order of its own).
    fn keys(target: Value) -> Value {
        match target {
            Value::List(items) => Ok(Value::List((0..items.len() as i64).map(Value::Int).collect::<Vec<_>>().into())),
            Value::Map(map) => {
                let mut keys: Vec<&Key> = map.map.keys().collect();
                keys.sort();
                Ok(Value::List(keys.into_iter().map(Value::from).collect::<Vec<_>>().into()))
            }
            other => Err(error("all", format!("no such overload: {} is not a list or a map", other.type_of()))),
        }
    }
}

fn key_of(value: Value, function: &str) -> Result<Key, ExecutionError> {
    let shown = format!("{value:?}");
    value.try_into().map_err(|_| error(function, format!("unsupported map key: {shown}")))
}

overload! {
    fn pairs_to_map(pairs: Value) -> Value {
        let Value::List(pairs) = pairs else { return Err(error("transformMap", "not a list")) };
        let mut map = BTreeMap::new();
        for pair in pairs.iter() {
            let Value::List(kv) = pair else { return Err(error("transformMap", "not a pair")) };
            let (Some(k), Some(v)) = (kv.first(), kv.get(1)) else { return Err(error("transformMap", "not a pair")) };
            map.insert(key_of(k.clone(), "transformMap")?, v.clone());
        }
        Ok(Value::Map(Map { map: Arc::new(map.into_iter().collect()) }))
    }
}

overload! {
    fn merge_maps(maps: Value) -> Value {
        let Value::List(maps) = maps else { return Err(error("transformMapEntry", "not a list")) };
        let mut merged = BTreeMap::new();
        for entry in maps.iter() {
            let Value::Map(entry) = entry else {
                return Err(error("transformMapEntry", "transformMapEntry expects a map for each entry"));
            };
            let mut keys: Vec<&Key> = entry.map.keys().collect();
            keys.sort();
            for key in keys {
                if merged.insert(key.clone(), entry.map[key].clone()).is_some() {
                    let shown = Value::from(key);
                    return Err(error("transformMapEntry", format!("insert failed: key {shown:?} already exists")));
                }
            }
        }
        Ok(Value::Map(Map { map: Arc::new(merged.into_iter().collect()) }))
    }
}
