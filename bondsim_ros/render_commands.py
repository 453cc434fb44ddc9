"""``bondsim-ros render``: a mechanism XML or URDF drawn off-screen, or the mechanism a model file
binds (its ``mechanism:`` section) driven by the model's own columns.

This module glues the two layers: ``mechanism/`` draws joint values from CSV columns and knows
nothing of models; the binding is read and checked by ``robots/yaml_binding.py``, as for the
live twin.
"""
from __future__ import annotations

from bondsim_ros.cliargs import integer, number

import math
from pathlib import Path

MODEL_SUFFIXES = (".yaml", ".yml")


def register(sub) -> None:
    r = sub.add_parser("render", help="draw a mechanism off-screen (PNG, or MP4/GIF along a trajectory)",
                       description="Render FILE (mechanism XML or URDF) at zero joint values, at the first row of "
                                   "--joints, or along all rows (video output). CSV columns: t, x, y, phi (the base "
                                   "pose) and one column per joint, named like the XML joints. A model file with a "
                                   "mechanism: section draws the XML it names, its bound columns (the output of "
                                   "`bondsim-ros simulate MODEL.yaml --csv`) driving their joints and base, as in "
                                   "the live twin. A video plays the CSV's t in real time (times --speed): each "
                                   "frame shows the row nearest to its time, whatever the rows' spacing. Progress: "
                                   "a bar on a terminal, a line every 5% or 10 s on any other stderr (a log file).")
    r.add_argument("file", metavar="FILE.xml|FILE.urdf|MODEL.yaml")
    r.add_argument("-o", "--output", required=True, metavar="OUT.png|OUT.mp4|OUT.gif")
    r.add_argument("--joints", metavar="CSV", help="joint values, e.g. from `bondsim-ros simulate robotino --csv`")
    r.add_argument("--fps", type=integer, default=25, help="video frame rate (default 25; a GIF at most 50)")
    r.add_argument("--speed", type=number, default=1.0, metavar="S",
                   help="playback speed: simulated seconds per video second (default 1: real time)")
    r.add_argument("--every", type=integer, default=1, metavar="K",
                   help="use every K-th CSV row only (frames are then picked from those by time)")
    r.add_argument("--row", type=integer, default=0, help="CSV row for a still image (default: the first)")
    r.add_argument("--search-path", action="append", default=[], metavar="DIR")
    r.add_argument("--size", default="1280x960", metavar="WxH", help="image size in pixels")
    r.add_argument("--view", choices=("auto", "robot", "scene", "follow"), default="auto",
                   help="framing: the robot (and its path), the whole scene, or a 2 m window following the robot")
    r.add_argument("--jobs", "-j", type=integer, default=1, metavar="N",
                   help="processes drawing a video's frames (default 1; the frames are the same)")
    r.add_argument("--quiet", "-q", action="store_true")
    r.set_defaults(func=cmd_render)


def bound_mechanism(model, joints_csv, search_path=()) -> tuple[Path, dict, tuple | None]:
    """(mechanism XML, {joint: CSV column}, (x, y, phi) CSV columns or None) of a model file's
    mechanism: section; the section, and the CSV's header against it, checked as ``up --model``
    checks them (RobotError or RenderError naming file and line)."""
    from bondsim_ros.mechanism.render import read_csv_header
    from bondsim_ros.robots.yaml_binding import check_binding, read_binding

    spec = read_binding(model)
    header = read_csv_header(joints_csv) if joints_csv else None
    joints, base = check_binding(model, spec, header, missing=f"{joints_csv} has no column", search_path=search_path)
    return spec["file"][0], joints, None if base is None else (base["x"], base["y"], base["yaw"])


def cmd_render(args) -> int:
    from bondsim_ros.cliargs import CLIError, check_folders
    from bondsim_ros.mechanism import MechanismError
    from bondsim_ros.mechanism.render import MAX_SIDE, RenderError, render
    from bondsim_ros.outfiles import check_output
    from bondsim_ros.robots.plugin import RobotError

    try:
        w, h = (integer(v) for v in args.size.lower().split("x"))
    except ValueError:
        raise CLIError(f"--size expects WxH, got {args.size!r}") from None
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        raise CLIError(f"--size {args.size}: width and height must be 1..{MAX_SIDE} pixels")
    if args.fps <= 0 or args.every <= 0:
        raise CLIError("--fps and --every must be positive")
    if not (args.speed > 0 and math.isfinite(args.speed)):
        raise CLIError(f"--speed {args.speed}: give a positive number (1 = real time)")
    if args.jobs < 1:
        raise CLIError(f"--jobs {args.jobs}: give a number of processes, at least 1")
    check_folders(args.search_path, "--search-path")
    file, columns, base = Path(args.file), None, None
    if file.is_dir():  # (before the output check, which would call the folder an input written into)
        raise CLIError(f"{file}: cannot read file: Is a directory")
    inputs = [args.file, args.joints]
    if file.suffix.lower() in MODEL_SUFFIXES:
        try:
            file, columns, base = bound_mechanism(file, args.joints, args.search_path)
        except (RobotError, RenderError) as exc:
            raise CLIError(str(exc)) from None
        inputs.append(file)
    check_output(args.output, "-o", inputs=inputs)
    try:
        written = render(file, args.output, joints_csv=args.joints, fps=args.fps, every=args.every,
                         row=args.row, search_path=args.search_path, size=(w, h), view=args.view,
                         progress=not args.quiet, speed=args.speed, jobs=args.jobs, columns=columns,
                         base_columns=base)
    except (MechanismError, RenderError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot write {args.output}: {exc}") from None
    print(written)
    return 0
