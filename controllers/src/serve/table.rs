//! `as=Table` answers for `kubectl get`: a `meta.k8s.io/v1` Table with the Name and Age columns
//! every kind has (kube-apiserver's default table convertor).

use std::sync::Arc;

use hyper::header::HeaderMap;
use kube_core::DynamicObject;
use model_apiserver::ResourceType;
use serde_json::{Value, json};

/// Whether the client asked for a Table (kubectl's `Accept: application/json;as=Table;...`).
pub fn wanted(headers: &HeaderMap) -> bool {
    super::handler::accept(headers).split(',').next().is_some_and(|first| first.contains("as=Table"))
}

/// The Table of `items`.
pub fn table(_ty: &ResourceType, items: &[Arc<DynamicObject>], metadata: Value) -> Value {
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let age =
                o.metadata.creation_timestamp.as_ref().map_or("<unknown>".to_owned(), |t| age(now, t.0));
            let mut meta = serde_json::to_value(&o.metadata).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut meta {
                m.remove("managedFields");
            }
            json!({
                "cells": [o.metadata.name.clone().unwrap_or_default(), age],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta},
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is the time the object was created.", "priority": 0},
        ],
        "rows": rows,
    })
}

/// kubectl's short age: `5s`, `3m`, `2h`, `4d`.
fn age(now: jiff::Timestamp, created: jiff::Timestamp) -> String {
    let seconds = now.as_second().saturating_sub(created.as_second()).max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}
