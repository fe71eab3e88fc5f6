"""Workspace layer (docs/spec.md §1, 2, 7, 8, 14): the bottom of reme, knowing nothing of the layers above.

- `layout.Workspace`: root, configured folder names, `resolve` (via `paths`), `lock` (via `locks`);
- `paths`: the one path-safety gate; `atomic`: temp file + fsync + rename; `locks`: cross-process locks;
- `fmsplit` / `frontmatter`: front matter found, read forgivingly, merged with minimal change;
- `wikilinks`: the one link parser and rewriter; `links`: inbound links by scan (no index);
- `reading` / `writing` / `moving`: the file jobs; `daily`: the daily jobs; `textio`: exact text I/O and caps.
"""
