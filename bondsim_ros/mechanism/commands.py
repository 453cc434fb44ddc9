"""``bondsim-ros xml2urdf``: mechanism XML to URDF from the command line (``render``: render_commands.py)."""
from __future__ import annotations

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


def cmd_xml2urdf(args) -> int:
    from bondsim_ros.cliargs import CLIError, check_folders
    from bondsim_ros.outfiles import check_output

    from . import MechanismError, to_urdf

    check_folders(args.search_path, "--search-path")
    check_output(args.output, "-o")
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
        n_j, n_p = len(moving), len(result.probes)
        print(f"{n_j} joint{'' if n_j == 1 else 's'} ({sum(j.virtual for j in moving)} virtual), "
              f"{n_p} probe{'' if n_p == 1 else 's'}", file=sys.stderr)
        for robot in result.robots:
            if robot["dropped"]:
                x, y, yaw = robot["initial_pose"]
                print(f"{robot['prefix']}{robot['name']}: planar base {', '.join(robot['dropped'])} -> "
                      f"odom -> {robot['root']}; initial pose x={x:g} y={y:g} yaw={yaw:g} rad", file=sys.stderr)
        for f in result.files:
            print(f)
    return 0
