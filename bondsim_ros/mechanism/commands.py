"""``bondsim-ros xml2urdf | render``: mechanism XML from the command line."""
from __future__ import annotations

import math
import sys


def register(sub) -> None:
    p = sub.add_parser("xml2urdf", help="convert mechanism XML (project, robot or object) to URDF",
                       description="Convert a mechanism XML file to URDF (or xacro). A project gives one URDF per "
                                   "robot plus the static scene (URDF and a JSON marker list); generated meshes go "
                                   "to OUT_FOLDER/STEM/meshes/. Nothing is written if the input is rejected.")
    p.add_argument("file", metavar="FILE.xml")
    p.add_argument("-o", "--output", required=True, metavar="OUT.urdf")
    p.add_argument("--xacro", action="store_true", help="write xacro with a 'prefix' argument (several robots)")
    p.add_argument("--search-path", action="append", default=[], metavar="DIR",
                   help="extra folder to look for referenced NAME.xml files (repeatable)")
    p.add_argument("--keep-virtual", action="store_true",
                   help="keep the virtual planar base joints (X, Y, yaw) under a 'world' link instead of leaving "
                        "the base pose to odom -> base_footprint")
    p.add_argument("--mesh-uri", default="", metavar="URI",
                   help="prefix of mesh paths, e.g. package://bondsim_ros/urdf/ (default: paths relative to the "
                        "URDF's folder; with --xacro this is the default of the mesh_uri argument)")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_xml2urdf)

    r = sub.add_parser("render", help="draw a mechanism off-screen (PNG, or MP4/GIF along a trajectory)",
                       description="Render FILE (mechanism XML or URDF) at zero joint values, at the first row of "
                                   "--joints, or along all rows (video output). CSV columns: t, x, y, phi (the base "
                                   "pose) and one column per joint, named like the XML joints. A video plays the "
                                   "CSV's t in real time (times --speed): each frame shows the row nearest to its "
                                   "time, whatever the rows' spacing. Progress: a bar on a terminal, a line every "
                                   "5% or 10 s on any other stderr (a log file).")
    r.add_argument("file", metavar="FILE.xml|FILE.urdf")
    r.add_argument("-o", "--output", required=True, metavar="OUT.png|OUT.mp4|OUT.gif")
    r.add_argument("--joints", metavar="CSV", help="joint values, e.g. from `bondsim-ros simulate robotino --csv`")
    r.add_argument("--fps", type=int, default=25, help="video frame rate (default 25)")
    r.add_argument("--speed", type=float, default=1.0, metavar="S",
                   help="playback speed: simulated seconds per video second (default 1: real time)")
    r.add_argument("--every", type=int, default=1, metavar="K",
                   help="use every K-th CSV row only (frames are then picked from those by time)")
    r.add_argument("--row", type=int, default=0, help="CSV row for a still image (default: the first)")
    r.add_argument("--search-path", action="append", default=[], metavar="DIR")
    r.add_argument("--size", default="1280x960", metavar="WxH", help="image size in pixels")
    r.add_argument("--view", choices=("auto", "robot", "scene", "follow"), default="auto",
                   help="framing: the robot (and its path), the whole scene, or a 2 m window following the robot")
    r.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="processes drawing a video's frames (default 1; the frames are the same)")
    r.add_argument("--quiet", "-q", action="store_true")
    r.set_defaults(func=cmd_render)


def cmd_xml2urdf(args) -> int:
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.outfiles import check_output

    from . import MechanismError, to_urdf

    check_output(args.output, "-o", make_folder=True)
    try:
        result = to_urdf(args.file, args.output, xacro=args.xacro, keep_virtual=args.keep_virtual,
                         search_path=args.search_path, mesh_uri=args.mesh_uri)
    except MechanismError as exc:
        raise CLIError(str(exc) if exc.file else exc.reason) from None
    except OSError as exc:
        raise CLIError(f"cannot write output: {exc}") from None
    if not args.quiet:
        for w in result.warnings:
            print(f"warning: {w}", file=sys.stderr)
        moving = [j for j in result.joints if j.type != "fixed"]
        print(f"{len(moving)} joints ({sum(j.virtual for j in moving)} virtual), {len(result.probes)} probes",
              file=sys.stderr)
        for robot in result.robots:
            if robot["dropped"]:
                x, y, yaw = robot["initial_pose"]
                print(f"{robot['prefix']}{robot['name']}: planar base {', '.join(robot['dropped'])} -> "
                      f"odom -> {robot['root']}; initial pose x={x:g} y={y:g} yaw={yaw:g} rad", file=sys.stderr)
        for f in result.files:
            print(f)
    return 0


def cmd_render(args) -> int:
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.outfiles import check_output

    from . import MechanismError
    from .render import MAX_SIDE, RenderError, render

    try:
        w, h = (int(v) for v in args.size.lower().split("x"))
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
    check_output(args.output, "-o", make_folder=True, inputs=[args.file, args.joints])
    try:
        written = render(args.file, args.output, joints_csv=args.joints, fps=args.fps, every=args.every,
                         row=args.row, search_path=args.search_path, size=(w, h), view=args.view,
                         progress=not args.quiet, speed=args.speed, jobs=args.jobs)
    except (MechanismError, RenderError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot write {args.output}: {exc}") from None
    print(written)
    return 0
