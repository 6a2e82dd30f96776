//! Semver guard: the library's public API, listed from the source, must
//! equal the checked-in `tests/public-api.txt`, so that every change to it
//! is a visible diff in review.
//!
//! The listing starts at `src/lib.rs`: every `pub use` at the crate root
//! (followed through the modules' own re-exports to the definition) and
//! every public module that is not `#[doc(hidden)]`. For each item it
//! writes its signature: a function's signature, a struct's derives and
//! public fields, an enum's variants, a trait's items; then the public
//! methods and constants of the item's inherent impls (wherever in `src/`
//! they are) and the traits it implements. `#[doc(hidden)]` items, private
//! items, function bodies and doc comments are left out. Modules hidden
//! from the docs are not listed: they are public only for the tools and
//! carry no stability promise.
//!
//! After an intended change: `UPDATE_PUBLIC_API=1 cargo test -p ginex --test
//! public_api`, then review and commit the new `tests/public-api.txt`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use quote::ToTokens;
use syn::{Attribute, ImplItem, Item, TraitItem, UseTree, Visibility};

const LISTING: &str = "tests/public-api.txt";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every source file of the library, parsed, by module path.
struct Crate {
    files: BTreeMap<Vec<String>, (PathBuf, syn::File)>,
}

impl Crate {
    fn load() -> Crate {
        let mut files = BTreeMap::new();
        let src = root().join("src");
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let rel = path.strip_prefix(&src).unwrap().with_extension("");
                let mut module: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                    module.pop();
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let file =
                    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                files.insert(module, (path, file));
            }
        }
        Crate { files }
    }

    fn items(&self, module: &[String]) -> &[Item] {
        match self.files.get(module) {
            Some((_, f)) => &f.items,
            None => panic!("no source file for module {}", module.join("::")),
        }
    }

    /// The module and item that `name`, seen from `module`, is defined as.
    fn resolve(&self, module: &[String], name: &str) -> (Vec<String>, Item) {
        for item in self.items(module) {
            if item_name(item).as_deref() == Some(name) && !matches!(item, Item::Use(_)) {
                return (module.to_vec(), item.clone());
            }
        }
        for item in self.items(module) {
            if let Item::Use(u) = item {
                let mut found = Vec::new();
                use_paths(&u.tree, &mut Vec::new(), &mut found);
                for (path, alias) in found {
                    if alias == name {
                        let (target, last) = path.split_at(path.len() - 1);
                        let target = absolute(module, target);
                        return self.resolve(&target, &last[0]);
                    }
                }
            }
        }
        panic!(
            "{name} is not defined or re-exported in {}",
            module.join("::")
        )
    }
}

/// `crate::a::b`, `self::x`, `super::y` or a child path, from `module`.
fn absolute(module: &[String], path: &[String]) -> Vec<String> {
    let mut out = module.to_vec();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            out.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        _ => {}
    }
    for seg in rest {
        if seg == "super" {
            out.pop();
        } else {
            out.push(seg.clone());
        }
    }
    out
}

/// (path, name it is visible as) for every leaf of a use tree.
fn use_paths(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((path, n.ident.to_string()));
        }
        UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((path, r.rename.to_string()));
        }
        UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
        UseTree::Glob(_) => panic!("glob re-exports are not listed; name the items"),
    }
}

fn item_name(item: &Item) -> Option<String> {
    Some(match item {
        Item::Struct(i) => i.ident.to_string(),
        Item::Enum(i) => i.ident.to_string(),
        Item::Fn(i) => i.sig.ident.to_string(),
        Item::Trait(i) => i.ident.to_string(),
        Item::Type(i) => i.ident.to_string(),
        Item::Const(i) => i.ident.to_string(),
        Item::Static(i) => i.ident.to_string(),
        Item::Mod(i) => i.ident.to_string(),
        _ => return None,
    })
}

/// `#[doc(hidden)]` (not a doc comment that says "hidden") or `#[cfg(test)]`.
fn hidden(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| match &a.meta {
        syn::Meta::List(l) if l.path.is_ident("doc") => l.tokens.to_string().trim() == "hidden",
        _ => a.path().is_ident("cfg") && a.to_token_stream().to_string().contains("test"),
    })
}

fn is_pub(v: &Visibility) -> bool {
    matches!(v, Visibility::Public(_))
}

/// Tokens as text, spaced for reading.
fn text(t: &impl ToTokens) -> String {
    let mut s = t.to_token_stream().to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ::", "::"),
        (" : ", ": "),
        (" ,", ","),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        ("& ", "&"),
        (" ;", ";"),
        ("# [", "#["),
        ("- >", "->"),
        ("->", " -> "),
        ("  ", " "),
    ] {
        s = s.replace(from, to);
    }
    // `f (x)` → `f(x)`, `#[derive (X)]` → `#[derive(X)]`.
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1);
        if c == ' '
            && after == Some(&'(')
            && before.is_some_and(|b| b.is_alphanumeric() || b == '_')
        {
            continue;
        }
        out.push(c);
    }
    out
}

/// A struct's or variant's fields without their attributes (docs).
fn fields(f: &syn::Fields) -> String {
    let list = |fs: &mut dyn Iterator<Item = &syn::Field>| -> Vec<String> {
        fs.map(|f| match &f.ident {
            Some(i) => format!("{i}: {}", text(&f.ty)),
            None => text(&f.ty),
        })
        .collect()
    };
    match f {
        syn::Fields::Named(n) => format!(" {{ {} }}", list(&mut n.named.iter()).join(", ")),
        syn::Fields::Unnamed(u) => format!("({})", list(&mut u.unnamed.iter()).join(", ")),
        syn::Fields::Unit => String::new(),
    }
}

/// Attributes that are part of the API: derives, `non_exhaustive`, `must_use`.
fn api_attrs(attrs: &[Attribute]) -> String {
    attrs
        .iter()
        .filter(|a| {
            ["derive", "non_exhaustive", "must_use", "repr"]
                .iter()
                .any(|n| a.path().is_ident(n))
        })
        .map(|a| text(a) + " ")
        .collect()
}

/// `fn f(..)` written as `fn path(..)`.
fn qualified(sig: &syn::Signature, path: &str) -> String {
    text(sig).replacen(&format!("fn {}", sig.ident), &format!("fn {path}"), 1)
}

/// The lines of `item`, shown as `name` (its path from the crate root).
fn signature(name: &str, item: &Item, out: &mut Vec<String>) {
    match item {
        Item::Struct(s) => {
            out.push(format!(
                "{}pub struct {name}{}",
                api_attrs(&s.attrs),
                text(&s.generics)
            ));
            for f in &s.fields {
                if is_pub(&f.vis) && !hidden(&f.attrs) {
                    let field = f
                        .ident
                        .as_ref()
                        .map_or("(tuple)".to_string(), |i| i.to_string());
                    out.push(format!("pub {name}.{field}: {}", text(&f.ty)));
                }
            }
            if s.fields.iter().any(|f| !is_pub(&f.vis)) {
                out.push(format!("{name} has private fields"));
            }
        }
        Item::Enum(e) => {
            out.push(format!(
                "{}pub enum {name}{}",
                api_attrs(&e.attrs),
                text(&e.generics)
            ));
            for v in &e.variants {
                out.push(format!("{name}::{}{}", v.ident, fields(&v.fields)));
            }
        }
        Item::Fn(f) => out.push(format!("pub {}", qualified(&f.sig, name))),
        Item::Type(t) => out.push(format!(
            "pub type {name}{} = {}",
            text(&t.generics),
            text(&t.ty)
        )),
        Item::Const(c) => out.push(format!("pub const {name}: {}", text(&c.ty))),
        Item::Trait(t) => {
            let supers = if t.supertraits.is_empty() {
                String::new()
            } else {
                format!(": {}", text(&t.supertraits))
            };
            out.push(format!("pub trait {name}{}{supers}", text(&t.generics)));
            for ti in &t.items {
                match ti {
                    TraitItem::Fn(f) => out.push(format!("{name}: {}", text(&f.sig))),
                    TraitItem::Type(ty) => out.push(format!("{name}: type {}", ty.ident)),
                    TraitItem::Const(c) => {
                        out.push(format!("{name}: const {}: {}", c.ident, text(&c.ty)))
                    }
                    _ => {}
                }
            }
        }
        other => panic!("{name}: unexpected item kind {}", text(other)),
    }
}

/// The last path segment of an impl's self type.
fn self_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Inherent methods and trait impls of `name` (defined in `home`).
fn impls(krate: &Crate, ident: &str, name: &str, home: &[String], out: &mut Vec<String>) {
    // A name defined twice in the crate only matches impls in its own file.
    let defined = krate
        .files
        .values()
        .flat_map(|(_, f)| f.items.iter())
        .filter(|i| {
            item_name(i).as_deref() == Some(ident) && !matches!(i, Item::Use(_) | Item::Mod(_))
        })
        .count();
    let mut inherent = Vec::new();
    let mut traits = Vec::new();
    for (module, (_, file)) in &krate.files {
        if defined > 1 && module.as_slice() != home {
            continue;
        }
        for item in &file.items {
            let Item::Impl(imp) = item else { continue };
            if self_name(&imp.self_ty).as_deref() != Some(ident) || hidden(&imp.attrs) {
                continue;
            }
            match &imp.trait_ {
                Some((neg, path, _)) => {
                    let assoc: Vec<String> = imp
                        .items
                        .iter()
                        .filter_map(|i| match i {
                            ImplItem::Type(t) => {
                                Some(format!("type {} = {}", t.ident, text(&t.ty)))
                            }
                            _ => None,
                        })
                        .collect();
                    let neg = if neg.is_some() { "!" } else { "" };
                    let assoc = if assoc.is_empty() {
                        String::new()
                    } else {
                        format!(" {{ {} }}", assoc.join("; "))
                    };
                    traits.push(format!(
                        "impl{} {neg}{} for {name}{assoc}",
                        text(&imp.generics),
                        text(path)
                    ));
                }
                None => {
                    for i in &imp.items {
                        match i {
                            ImplItem::Fn(f) if is_pub(&f.vis) && !hidden(&f.attrs) => {
                                let full = format!("{name}::{}", f.sig.ident);
                                inherent.push(format!("pub {}", qualified(&f.sig, &full)));
                            }
                            ImplItem::Const(c) if is_pub(&c.vis) && !hidden(&c.attrs) => {
                                inherent.push(format!(
                                    "pub const {name}::{}: {}",
                                    c.ident,
                                    text(&c.ty)
                                ));
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    inherent.sort();
    traits.sort();
    out.extend(inherent);
    out.extend(traits);
}

fn listing() -> String {
    let krate = Crate::load();
    let lib = &krate.files[&Vec::new()].1;
    let mut exports: BTreeMap<String, (Vec<String>, String)> = BTreeMap::new();
    let mut modules = Vec::new();
    for item in &lib.items {
        match item {
            Item::Use(u) if is_pub(&u.vis) => {
                let mut found = Vec::new();
                use_paths(&u.tree, &mut Vec::new(), &mut found);
                for (path, alias) in found {
                    let (target, last) = path.split_at(path.len() - 1);
                    exports.insert(alias, (absolute(&[], target), last[0].clone()));
                }
            }
            Item::Mod(m) if is_pub(&m.vis) && !hidden(&m.attrs) => {
                modules.push(m.ident.to_string());
            }
            Item::Mod(_) | Item::Use(_) => {}
            other if item_name(other).is_some() => {
                if let Some(name) = item_name(other) {
                    exports.insert(name, (Vec::new(), item_name(other).unwrap_or_default()));
                }
            }
            _ => {}
        }
    }
    let mut out = vec![
        "# The public API of the ginex library (tests/public_api.rs writes it;".to_string(),
        "# UPDATE_PUBLIC_API=1 cargo test -p ginex --test public_api to update).".to_string(),
    ];
    let list = |shown: &str, module: &[String], ident: &str, out: &mut Vec<String>| {
        let (home, item) = krate.resolve(module, ident);
        out.push(String::new());
        signature(shown, &item, out);
        if matches!(item, Item::Struct(_) | Item::Enum(_)) {
            impls(&krate, ident, shown, &home, out);
        }
    };
    for (alias, (module, name)) in &exports {
        list(alias, module, name, &mut out);
    }
    for m in modules {
        let module = vec![m.clone()];
        out.push(String::new());
        out.push(format!("pub mod {m}"));
        let items: Vec<(String, bool)> = krate
            .items(&module)
            .iter()
            .filter_map(|i| {
                let public = match i {
                    Item::Struct(s) => is_pub(&s.vis) && !hidden(&s.attrs),
                    Item::Enum(s) => is_pub(&s.vis) && !hidden(&s.attrs),
                    Item::Fn(s) => is_pub(&s.vis) && !hidden(&s.attrs),
                    Item::Trait(s) => is_pub(&s.vis) && !hidden(&s.attrs),
                    Item::Type(s) => is_pub(&s.vis) && !hidden(&s.attrs),
                    Item::Const(s) => is_pub(&s.vis) && !hidden(&s.attrs),
                    _ => false,
                };
                public.then(|| (item_name(i).unwrap_or_default(), true))
            })
            .collect();
        for (name, _) in items {
            list(&format!("{m}::{name}"), &module, &name, &mut out);
        }
    }
    out.join("\n") + "\n"
}

#[test]
fn the_public_api_matches_the_checked_in_listing() {
    let got = listing();
    let path = root().join(LISTING);
    if std::env::var_os("UPDATE_PUBLIC_API").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    if got != want {
        let diff: Vec<String> = diff_lines(&want, &got);
        panic!(
            "the public API changed ({} lines differ; - listed, + now):\n{}\n\n\
             If the change is intended: UPDATE_PUBLIC_API=1 cargo test -p ginex --test public_api, \
             then review and commit {LISTING}.",
            diff.len(),
            diff.join("\n")
        );
    }
}

/// Lines only in `a` (`- `) or only in `b` (`+ `), in order.
fn diff_lines(a: &str, b: &str) -> Vec<String> {
    let count = |s: &str| {
        let mut m: BTreeMap<String, i64> = BTreeMap::new();
        for l in s.lines() {
            *m.entry(l.to_string()).or_default() += 1;
        }
        m
    };
    let (ca, cb) = (count(a), count(b));
    let mut out = Vec::new();
    for l in a.lines() {
        if ca[l] > cb.get(l).copied().unwrap_or(0) {
            out.push(format!("- {l}"));
        }
    }
    for l in b.lines() {
        if cb[l] > ca.get(l).copied().unwrap_or(0) {
            out.push(format!("+ {l}"));
        }
    }
    out.dedup();
    out
}

#[test]
fn the_listing_sees_what_it_claims_to() {
    let l = listing();
    // A root re-export followed through two modules, a method from another
    // file, a trait impl, an enum's variants, a hidden method left out.
    for line in [
        "pub struct StoreBuilder",
        "pub fn Store::verify(&self) -> Result<VerifyReport>",
        "pub fn Loader::builder(store: &Store) -> LoaderBuilder<'_>",
        "impl Iterator for Loader { type Item = Result<Batch> }",
        "Split::Valid",
        "pub Batch.hops: Vec<Hop>",
        "pub fn progress::install(sink: Box<dyn ProgressSink>) -> bool",
        "Error::Io { op: &'static str, path: PathBuf, source: std::io::Error }",
        // Its doc comment says "not hidden"; it is listed all the same.
        "pub EpochReport.changeset_exposed: Duration",
    ] {
        assert!(l.lines().any(|x| x == line), "{line:?} missing from:\n{l}");
    }
    assert!(
        !l.contains("page_crcs"),
        "a #[doc(hidden)] method is not API"
    );
    assert!(
        !l.contains("pub struct Bar"),
        "a #[doc(hidden)] struct is not API"
    );
    assert!(!l.contains("pub mod exec"), "hidden modules are not listed");
}
