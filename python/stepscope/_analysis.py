"""The result of :func:`stepscope.analyze`: the JSON document ``analyze --json`` prints, as
attributes, and the tables ``analyze --parquet`` writes, as Arrow tables."""

from __future__ import annotations

import html
import io
from collections.abc import Iterator
from typing import Any

# The replay counts summed over files for ``Analysis.counts``.
COUNT_KEYS = (
    "replays",
    "recorded_replays",
    "complete_replays",
    "unverified_replays",
    "short_replays",
    "empty_replays",
    "damaged_replays",
)


class Table:
    """One table: ``arrow`` (a ``pyarrow.Table``), ``to_pandas()``, ``to_polars()``."""

    def __init__(self, name: str, parquet: bytes):
        self.name = name
        self._parquet = parquet
        self._arrow: Any = None

    @property
    def arrow(self) -> Any:
        """The table as a ``pyarrow.Table`` (read on first use)."""
        if self._arrow is None:
            import pyarrow.parquet as pq

            self._arrow = pq.read_table(io.BytesIO(self._parquet))
        return self._arrow

    @property
    def num_rows(self) -> int:
        return int(self.arrow.num_rows)

    def __len__(self) -> int:
        return self.num_rows

    @property
    def column_names(self) -> list[str]:
        return list(self.arrow.column_names)

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` (needs pandas)."""
        return self.arrow.to_pandas()

    def to_polars(self) -> Any:
        """A ``polars.DataFrame`` (needs polars)."""
        import polars as pl

        return pl.from_arrow(self.arrow)

    def to_parquet_bytes(self) -> bytes:
        """The table as the Parquet file ``--parquet`` would write."""
        return self._parquet

    def __repr__(self) -> str:
        return f"<stepscope.Table {self.name}: {self.num_rows} rows>"


class Tables:
    """The tables by name, as attributes (``tables.replays``) or items (``tables["replays"]``)."""

    def __init__(self, parquet: dict[str, bytes]):
        self._tables = {name: Table(name, data) for name, data in parquet.items()}

    def __getattr__(self, name: str) -> Table:
        try:
            table: Table = self.__dict__["_tables"][name]
            return table
        except KeyError:
            raise AttributeError(f"no table {name!r}; tables: {', '.join(self.names)}") from None

    def __getitem__(self, name: str) -> Table:
        return self._tables[name]

    def __iter__(self) -> Iterator[Table]:
        return iter(self._tables.values())

    @property
    def names(self) -> list[str]:
        return list(self._tables)

    def __dir__(self) -> list[str]:
        return list(super().__dir__()) + self.names

    def __repr__(self) -> str:
        return f"<stepscope.Tables {', '.join(self.names)}>"


class Analysis:
    """What ``stepscope analyze`` found.

    ``verdict`` (``complete``, ``incomplete``, …: the same word as the command's), ``counts``
    (replays by status, summed over files), ``findings`` and ``advice`` (per file),
    ``files`` and ``document`` (the whole JSON document), ``exit_code`` (what the command
    would exit with), and ``tables`` (Arrow tables, as ``--parquet`` writes them).
    """

    def __init__(self, document: dict[str, Any], tables: dict[str, bytes], exit_code: int):
        self.document = document
        self.tables = Tables(tables)
        self.exit_code = exit_code

    @property
    def verdict(self) -> str:
        value: str = self.document["verdict"]
        return value

    @property
    def files(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["files"]
        return value

    @property
    def failed_files(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["failed_files"]
        return value

    @property
    def warnings(self) -> list[str]:
        value: list[str] = self.document["warnings"]
        return value

    @property
    def counts(self) -> dict[str, int]:
        totals = dict.fromkeys(COUNT_KEYS, 0)
        for file in self.files:
            coverage = file["replay_coverage"]
            for key in COUNT_KEYS:
                totals[key] += coverage.get(key) or 0
        return totals

    @property
    def findings(self) -> list[dict[str, Any]]:
        """Every file's findings, each with the file's ``path``."""
        found = []
        for file in self.files:
            for finding in file["replay_coverage"].get("findings") or []:
                found.append({"path": file["path"], **finding})
        return found

    @property
    def advice(self) -> list[dict[str, Any] | None]:
        """Each file's runtime-switch advice (``None`` where there is none)."""
        return [file.get("advice") for file in self.files]

    def stage_shares(self) -> dict[str, dict[str, float]]:
        """Per file path, each stage's share of the file's GPU time."""
        shares = {}
        for file in self.files:
            stages = (file.get("breakdown") or {}).get("stages") or []
            shares[file["path"]] = {s["stage"]: s["share_of_total"] for s in stages}
        return shares

    def __repr__(self) -> str:
        counts = self.counts
        return (
            f"<stepscope.Analysis {self.verdict}: {counts['recorded_replays']} of "
            f"{counts['replays']} replays recorded, {len(self.files)} file(s)>"
        )

    def _repr_html_(self) -> str:
        """The summary a notebook shows: the verdict, replay counts and stage shares."""
        counts = self.counts
        rows = []
        for file in self.files:
            coverage = file["replay_coverage"]
            stages = (file.get("breakdown") or {}).get("stages") or []
            shares = ", ".join(
                f"{html.escape(s['stage'])} {s['share_of_total'] * 100:.1f} %" for s in stages
            )
            rows.append(
                "<tr><td>{}</td><td>{}</td><td>{} of {}</td><td>{}</td></tr>".format(
                    html.escape(file["path"]),
                    html.escape(coverage["verdict"]),
                    coverage.get("recorded_replays") or 0,
                    coverage.get("replays") or 0,
                    shares,
                )
            )
        failed = "".join(
            f"<li>{html.escape(f['path'])}: {html.escape(f['error'])}</li>"
            for f in self.failed_files
        )
        return (
            '<div class="stepscope-analysis">'
            f"<h3>stepscope: {html.escape(self.verdict.upper())}</h3>"
            f"<p>{counts['recorded_replays']} of {counts['replays']} graph replays recorded "
            f"({counts['complete_replays']} complete, {counts['short_replays']} short, "
            f"{counts['empty_replays']} empty)</p>"
            "<table><thead><tr><th>file</th><th>verdict</th><th>replays recorded</th>"
            "<th>GPU time by stage</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
            + (f"<p>Not read:</p><ul>{failed}</ul>" if failed else "")
            + "</div>"
        )


class Diff:
    """What ``stepscope diff`` found: ``document`` (the JSON ``diff --json`` prints),
    ``stages`` (compared stages, each with its per-step change), ``refused`` (stages not
    compared, and why), ``regression_gate`` and ``exit_code``."""

    def __init__(self, document: dict[str, Any], exit_code: int):
        self.document = document
        self.exit_code = exit_code

    @property
    def stages(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["stages"]
        return value

    @property
    def refused(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.document["refused"]
        return value

    @property
    def regression_gate(self) -> dict[str, Any] | None:
        return self.document.get("regression_gate")

    def __repr__(self) -> str:
        return (
            f"<stepscope.Diff {len(self.stages)} stage(s) compared, "
            f"{len(self.refused)} refused, exit {self.exit_code}>"
        )
