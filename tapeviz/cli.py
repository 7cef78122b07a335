"""The `tapeviz` command: list the built-in examples, export their pictures, run the demo."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np


def _printed(printed: dict) -> str:
    parts = []
    for k, v in printed.items():
        if v is None:
            parts.append(f"{k} = None")
        elif isinstance(v, list):
            parts.append(f"{k} = [" + ", ".join(f"{x:.4g}" for x in v) + "]")
        else:
            parts.append(f"{k} = {np.array2string(np.asarray(v), precision=4, separator=', ')}".replace("\n", ""))
    return "TensorFlow printed: " + "; ".join(parts)


def export_example(name: str, path: str | os.PathLike, *, step: int | None = None) -> Path:
    """Run a built-in example and write its picture (.png/.svg) or animation (.gif)."""
    from . import api, examples
    from .export import check_path

    ex = examples.get(name)
    check_path(path)  # a bad path fails before the example runs
    run = ex.run()
    return api.save(run.tape, path, target=run.target, step=step, caption=f"{ex.title}\n{_printed(run.printed)}")


def export_all(out: Path, formats=("png", "svg", "gif")) -> list[Path]:
    from . import examples

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in examples.EXAMPLES:
        for fmt in formats:
            written.append(export_example(name, out / f"{name}.{fmt}"))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tapeviz", description="See what tf.GradientTape records.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("examples", help="list the built-in examples")
    p_exp = sub.add_parser("export", help="write one example's picture")
    p_exp.add_argument("name")
    p_exp.add_argument("-o", "--output", required=True, help="FILE.png, FILE.svg or FILE.gif")
    p_exp.add_argument("--step", type=int, default=None, help="backward step to show (default: finished)")
    p_demo = sub.add_parser("demo", help="export every example as PNG/SVG/GIF into a folder")
    p_demo.add_argument("--out", default="out/demo", help="folder to write into (default: out/demo)")
    args = parser.parse_args(argv)

    if args.command == "examples":
        from .examples import EXAMPLES

        width = max(len(n) for n in EXAMPLES)
        for e in EXAMPLES.values():
            print(f"{e.name:<{width}}  {e.heading}  {e.title}")
        return 0
    if args.command == "export":
        from .examples import EXAMPLES

        if args.name not in EXAMPLES:
            print(f"tapeviz: no example named {args.name!r}; run `tapeviz examples` to list them.", file=sys.stderr)
            return 2
        try:
            path = export_example(args.name, args.output, step=args.step)
        except (ValueError, OSError) as e:
            print(f"tapeviz: {e}", file=sys.stderr)
            return 2
        print(f"wrote {path}")
        return 0
    if args.command == "demo":
        out = Path(args.out).resolve()
        written = export_all(out)
        print(f"tapeviz demo: wrote {len(written)} files for {len(written) // 3} examples into {out}")
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
