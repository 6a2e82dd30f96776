//! The target type of node classification on a typed store: the seeds of
//! training, evaluation and the progress counts are the splits' nodes of
//! that type. A store with one labelled type needs no choice; one with
//! several needs `--target-type`. Untyped stores train on their splits as
//! they are.

use std::ops::Range;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::schema::Schema;
use crate::format::tables::Splits;
use crate::store::Store;

/// The node ids classification trains on: a type's id range, or every id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The target type's name and id range (None: an untyped store).
    pub typed: Option<(String, Range<u64>)>,
}

impl Target {
    /// The target of `store`, whose `labels` are given: the type named
    /// `requested`, else the only labelled type. Refuses a name on an
    /// untyped store, an unknown or unlabelled type, and a choice left
    /// open between several labelled types.
    pub fn choose(store: &Store, labels: &[i32], requested: Option<&str>) -> Result<Target> {
        Target::choose_in(store.schema(), labels, requested, store.dir())
    }

    /// [`Target::choose`] for a store at `dir` of `schema` (None: untyped).
    fn choose_in(
        schema: Option<&Schema>,
        labels: &[i32],
        requested: Option<&str>,
        dir: &Path,
    ) -> Result<Target> {
        let Some(schema) = schema else {
            if let Some(name) = requested {
                return Err(Error::invalid_argument(format!(
                    "--target-type {name}: {} is untyped (it has no node types)",
                    dir.display()
                )));
            }
            return Ok(Target { typed: None });
        };
        let labelled: Vec<&str> = schema
            .node_types
            .iter()
            .filter(|t| {
                t.ids()
                    .any(|v| labels.get(v as usize).is_some_and(|&l| l >= 0))
            })
            .map(|t| t.name.as_str())
            .collect();
        let name = match requested {
            Some(name) => {
                if schema.type_index(name).is_none() {
                    let all: Vec<&str> =
                        schema.node_types.iter().map(|t| t.name.as_str()).collect();
                    return Err(Error::invalid_argument(format!(
                        "--target-type {name}: {} has no such node type (its types: {})",
                        dir.display(),
                        all.join(", ")
                    )));
                }
                if !labelled.contains(&name) {
                    return Err(Error::invalid_argument(format!(
                        "--target-type {name}: no node of type {name} in {} has a label \
                         (labelled types: {})",
                        dir.display(),
                        if labelled.is_empty() {
                            "none".to_string()
                        } else {
                            labelled.join(", ")
                        }
                    )));
                }
                name
            }
            None => match labelled.as_slice() {
                [one] => one,
                [] => {
                    return Err(Error::invalid_argument(format!(
                        "{} has no labelled node to train on",
                        dir.display()
                    )))
                }
                several => {
                    return Err(Error::invalid_argument(format!(
                        "{} has labels on several node types ({}): choose one with --target-type",
                        dir.display(),
                        several.join(", ")
                    )))
                }
            },
        };
        let t = &schema.node_types[schema.type_index(name).unwrap_or_default()];
        Ok(Target {
            typed: Some((t.name.clone(), t.ids())),
        })
    }

    /// `splits` restricted to the target's nodes, in their order.
    pub fn splits(&self, splits: Splits) -> Splits {
        let Some((_, range)) = &self.typed else {
            return splits;
        };
        let keep =
            |ids: Vec<u64>| -> Vec<u64> { ids.into_iter().filter(|v| range.contains(v)).collect() };
        Splits {
            train: keep(splits.train),
            valid: keep(splits.valid),
            test: keep(splits.test),
        }
    }

    /// Whether restricting to the target drops any of `splits`' nodes
    /// (then a pass's seeds must be given, not taken from the store).
    pub fn narrows(&self, splits: &Splits) -> bool {
        self.splits(splits.clone()) != *splits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::test_schema;

    /// author 0..3 (labelled when `authors_labelled`), paper 3..6
    /// (labelled), field 6..7 (never).
    fn typed(authors_labelled: bool) -> (Schema, Vec<i32>) {
        let types = [("author", 0, 3, 4), ("paper", 3, 3, 4), ("field", 6, 1, 4)];
        let a = if authors_labelled { 1 } else { -1 };
        (test_schema(&types, &[]), vec![a, -1, a, 0, 2, 1, -1])
    }

    fn splits() -> Splits {
        Splits {
            train: vec![0, 3, 4],
            valid: vec![2, 5],
            test: vec![6],
        }
    }

    #[test]
    fn one_labelled_type_is_the_target_without_a_flag() {
        let dir = Path::new("s");
        let (schema, labels) = typed(false);
        let t = Target::choose_in(Some(&schema), &labels, None, dir).unwrap();
        assert_eq!(t.typed, Some(("paper".into(), 3..6)));
        assert!(t.narrows(&splits()));
        let s = t.splits(splits());
        assert_eq!((s.train, s.valid, s.test), (vec![3, 4], vec![5], vec![]));
        // Untyped: the splits as they are.
        let u = Target::choose_in(None, &labels, None, dir).unwrap();
        assert!(!u.narrows(&splits()));
        assert_eq!(u.splits(splits()), splits());
    }

    #[test]
    fn several_labelled_types_need_a_choice_and_bad_choices_are_refused() {
        let dir = Path::new("s");
        let (schema, labels) = typed(true);
        let e = Target::choose_in(Some(&schema), &labels, None, dir).unwrap_err();
        assert!(
            e.to_string().contains("several node types (author, paper)"),
            "{e}"
        );
        let t = Target::choose_in(Some(&schema), &labels, Some("author"), dir).unwrap();
        assert_eq!(t.splits(splits()).train, vec![0]);
        for (name, says) in [
            (
                "venue",
                "no such node type (its types: author, paper, field)",
            ),
            ("field", "no node of type field"),
        ] {
            let e = Target::choose_in(Some(&schema), &labels, Some(name), dir).unwrap_err();
            assert!(e.to_string().contains(says), "{name}: {e}");
        }
        let e = Target::choose_in(None, &labels, Some("paper"), dir).unwrap_err();
        assert!(e.to_string().contains("untyped"), "{e}");
    }
}
