"""Documentation generated from the code (kept in step by the tests)."""
from .schema import TABLES, cli_name


def tables_markdown() -> str:
    """docs/tables.md, generated from this module (a test keeps the file in step)."""
    out = ["# eaglelog tables", "",
           "Generated from `eaglelog/schema.py` by `python -m eaglelog.docs > docs/tables.md`."
           " Column names are part of the interface. **Core** columns are always present; the "
           "others appear only when the input printed them (a table never carries a column "
           "that is NA in every row). Missing values are NA (`<NA>`/`NaN`/`NaT`), never 0. "
           "Timestamps are naive local wall-clock times, as SGLang prints them.", ""]
    for t in TABLES.values():
        out += [f"## `{t.name}` (`--table {cli_name(t.name)}`)", "", t.doc[0].upper() + t.doc[1:]
                + ".", "", "| column | dtype | unit | core | meaning |", "|---|---|---|---|---|"]
        for c in t.columns:
            out.append(f"| `{c.name}` | {c.dtype} | {c.unit} | {'yes' if c.core else ''} | "
                       f"{c.doc} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(tables_markdown(), end="")
