"""The simulated sensors (bondsim_ros/sensors) against closed forms, and Nav2's map format as
nav2_map_server's map_io.cpp reads it (Jazzy 1.3.8+ / Kilted 1.4.x)."""
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bondsim_ros.sensors import (Bumper, IRSensorRing, LaserScanner, MapError, OccupancyGrid, World, cast, load_map,
                                 occupancy_from_pixels)

ROOT = Path(__file__).resolve().parents[1]
RES = 0.05


def walled(cells=(80, 80), origin=(-2.0, -2.0, 0.0)):
    """An empty grid (rows, cols) at RES with its origin; returns (data, origin)."""
    return np.zeros(cells, dtype=np.int8), origin


def face_x(grid, i):
    """World x of the left face of column i (yaw 0)."""
    return grid.origin[0] + i * RES


def scanner(**kw):
    kw.setdefault("sigma", 0.0)
    kw.setdefault("mount", (0.0, 0.0, 0.0))
    return LaserScanner(**kw)


# -- range against closed forms ------------------------------------------------------------------

def test_a_wall_at_a_known_distance_gives_d_over_cos():
    data, origin = walled()
    data[:, 60:62] = 100  # a wall: columns 60, 61 -> face at x = -2 + 60 * 0.05 = 1.0
    grid = OccupancyGrid(data, RES, origin)
    pose = (0.013, -0.021, 0.3)  # off the cell grid, turned
    laser = scanner(angle_min=-1.0, angle_max=1.0, angle_increment=0.01, range_max=10.0)
    ranges = laser.scan(World(grid), pose)
    beams = pose[2] + laser.angles
    d = face_x(grid, 60) - pose[0]
    # beams whose hit lies on the wall's face within the grid (|y| < 2)
    expected = d / np.cos(beams)
    on_face = np.abs(pose[1] + expected * np.sin(beams)) < 1.9
    assert on_face.sum() > 150
    err = np.abs(ranges[on_face] - expected[on_face])
    assert err.max() < 1e-5  # exact traversal: float32 round-off, far below half a cell (0.025 m)


def test_a_corner_gives_the_nearer_of_two_walls():
    data, origin = walled()
    data[:, 60:] = 100  # x >= 1.0
    data[70:, :] = 100  # y >= 1.5
    grid = OccupancyGrid(data, RES, origin)
    pose = (0.2, 0.1, 0.0)
    laser = scanner(angle_min=0.0, angle_max=math.pi / 2, angle_increment=0.005, range_max=10.0)
    ranges = laser.scan(World(grid), pose)
    a = laser.angles
    with np.errstate(divide="ignore"):
        to_x = np.where(np.cos(a) > 1e-12, (1.0 - pose[0]) / np.cos(a), np.inf)
        to_y = np.where(np.sin(a) > 1e-12, (1.5 - pose[1]) / np.sin(a), np.inf)
    expected = np.minimum(to_x, to_y)
    assert np.abs(ranges - expected).max() < 1e-5
    # the corner beam itself: exactly at the corner's bearing, the distance to (1.0, 1.5)
    corner = math.atan2(1.5 - pose[1], 1.0 - pose[0])
    r = cast(grid, grid.blocking(), [pose[:2]], [corner], 10.0)[0]
    assert r == pytest.approx(math.hypot(1.0 - pose[0], 1.5 - pose[1]), abs=1e-9)


def test_free_space_returns_the_maximum_range():
    data, origin = walled()
    data[:, 79] = 100  # a wall at x = 1.95, beyond the scanner's reach from x = -1.5
    grid = OccupancyGrid(data, RES, origin)
    laser = scanner(range_max=3.0)
    ranges = laser.scan(World(grid), (-1.5, 0.0, 0.0))
    assert np.all(ranges == np.float32(3.0))
    laser = scanner(range_max=3.0, no_return="inf")
    assert np.all(np.isinf(laser.scan(World(grid), (-1.5, 0.0, 0.0))))
    # outside the grid is free: a scanner outside the map looking away sees nothing
    assert np.all(scanner(range_max=50.0).scan(World(grid), (10.0, 0.0, 0.0))[[0, -1]] == np.float32(50.0))


def test_a_beam_from_outside_the_grid_hits_the_near_face():
    data, origin = walled()
    data[:, 0] = 100  # leftmost column: face at x = -2.0
    grid = OccupancyGrid(data, RES, origin)
    r = cast(grid, grid.blocking(), [(-5.0, 0.3)], [0.0], 10.0)
    assert r[0] == pytest.approx(3.0, abs=1e-12)
    # starting inside a blocking cell: 0
    assert cast(grid, grid.blocking(), [(-1.99, 0.3)], [1.0], 10.0)[0] == 0.0


def test_readings_stay_in_range_and_too_close_is_minus_inf():
    """LaserScan consumers discard values outside [range_min, range_max]: noise does not push a
    reading out; a wall nearer than range_min (the scanner inside an obstacle) is REP 117's -inf."""
    data, origin = walled()
    data[:, 60:62] = 100  # face at x = 1.0
    grid = OccupancyGrid(data, RES, origin)
    near_max = scanner(angle_min=-0.05, angle_max=0.05, angle_increment=0.001, range_max=1.0 + 1e-3, sigma=0.05)
    ranges = near_max.scan(World(grid), (0.0, 0.0, 0.0))
    assert ranges.max() == np.float32(1.0 + 1e-3) and ranges.min() >= np.float32(near_max.range_min)
    inside = scanner(angle_min=-1.0, angle_max=1.0, sigma=0.02).scan(World(grid), (1.02, 0.0, 0.0))
    assert np.all(inside == -np.inf)
    too_close = scanner(angle_min=0.0, angle_max=0.0, range_min=0.05).scan(World(grid), (0.97, 0.0, 0.0))
    assert too_close[0] == -np.inf


def test_a_scanner_outside_the_map_warns_nothing():
    import warnings

    data, origin = walled()
    grid = OccupancyGrid(data, RES, origin)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered" on beams that miss the grid
        ranges = scanner(range_max=5.0).scan(World(grid), (10.0, 10.0, 0.0))
    assert np.all(ranges == np.float32(5.0))


def test_the_default_scanner_is_the_tim571_and_its_fields_agree():
    laser = LaserScanner()
    assert laser.count == 811  # 270 deg at 1/3 deg, both ends included
    assert laser.angles[-1] == pytest.approx(laser.angle_max, abs=1e-9)
    assert laser.angles[405] == pytest.approx(0.0, abs=1e-12)
    assert laser.scan_time == pytest.approx(1 / 15)
    assert laser.time_increment == 0.0  # all beams at the stamp's pose
    assert (laser.range_min, laser.range_max) == (0.05, 25.0)


def test_the_mounting_pose_moves_the_beams():
    data, origin = walled()
    data[:, 60:62] = 100  # face at x = 1.0
    grid = OccupancyGrid(data, RES, origin)
    laser = scanner(angle_min=0.0, angle_max=0.0, mount=(0.12, 0.05, math.pi / 2))
    # robot turned -90 deg: the scanner, turned +90 deg on it, looks along +x from x = 0.05
    r = laser.scan(World(grid), (0.0, 0.0, -math.pi / 2))
    assert r[0] == pytest.approx(1.0 - 0.05, abs=1e-6)


def test_noise_is_gaussian_with_sigma_and_reproducible():
    data, origin = walled()
    data[:, 60:62] = 100
    grid, pose = OccupancyGrid(data, RES, origin), (0.0, 0.0, 0.0)
    exact = scanner(angle_min=-0.8, angle_max=0.8, angle_increment=0.002).scan(World(grid), pose)
    noisy = [scanner(angle_min=-0.8, angle_max=0.8, angle_increment=0.002, sigma=0.02, seed=7) for _ in range(2)]
    a, b = (n.scan(World(grid), pose) for n in noisy)
    assert np.array_equal(a, b)  # same seed, same readings
    residual = np.concatenate([a - exact] + [noisy[0].scan(World(grid), pose) - exact for _ in range(5)])
    assert abs(residual.mean()) < 0.003 and residual.std() == pytest.approx(0.02, rel=0.08)
    other = scanner(angle_min=-0.8, angle_max=0.8, angle_increment=0.002, sigma=0.02, seed=8)
    assert not np.array_equal(other.scan(World(grid), pose), a)


def test_a_non_finite_pose_is_refused_not_read_as_free_space():
    """A diverged twin's NaN odometry read all clear (25 m, 0.3 m) or overflowed in the bumper."""
    data, origin = walled()
    world = World(OccupancyGrid(data, RES, origin))
    for pose in ((math.nan, 0.0, 0.0), (0.0, math.inf, 0.0), (0.0, 0.0, math.nan)):
        for read in (scanner().scan, IRSensorRing().distances, Bumper().contact):
            with pytest.raises(ValueError, match="sensor pose must be finite"):
                read(world, pose)


def test_whole_number_settings_read_as_metres():
    """range_max=5 (an int) made the scan an integer array: every scan failed on -inf, and the IR
    readings were truncated to whole metres."""
    data, origin = walled()
    data[:, 60:] = 100  # face at x = 1.0
    world = World(OccupancyGrid(data, RES, origin))
    assert scanner(angle_min=0, angle_max=0, range_max=5).scan(world, (0.35, 0.0, 0.0))[0] == pytest.approx(0.65)
    ir = IRSensorRing(max_distance=1, min_distance=0).distances(world, (0.3, 0.0, 0.0))
    assert ir[0] == pytest.approx(1.0 - 0.3 - 0.185)


def test_beams_leaving_the_grid_on_its_edge_meet_nothing():
    """A beam that starts on the grid's outer edge and points out, or runs along its top or right
    edge, enters no cell: it read 0 (-inf, too close) or hit the edge cells."""
    data = np.zeros((4, 4), dtype=np.int8)
    data[:, 3] = 100
    data[3, :] = 100
    grid = OccupancyGrid(data, 1.0, (0.0, 0.0, 0.0))
    blocking = grid.blocking()
    assert cast(grid, blocking, [(4.0, 1.5)], [0.0], 9.0)[0] == math.inf  # out through the right edge
    assert cast(grid, blocking, [(1.0, 4.0)], [0.0], 9.0)[0] == math.inf  # along the top edge
    assert cast(grid, blocking, [(4.0, 0.5)], [math.pi / 2], 9.0)[0] == math.inf  # along the right edge
    assert cast(grid, blocking, [(4.0, 1.5)], [math.pi], 9.0)[0] == 0.0  # into the wall it starts on
    assert cast(grid, blocking, [(1.0, 3.0)], [0.0], 9.0)[0] == 0.0  # along an inner border: the row above


def test_bad_scanner_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="range_min < range_max"):
        LaserScanner(range_min=5.0, range_max=1.0)
    with pytest.raises(ValueError, match="angle_increment"):
        LaserScanner(angle_increment=0.0)
    with pytest.raises(ValueError, match="no_return"):
        LaserScanner(no_return="nan")


# -- IR sensors and bumper -------------------------------------------------------------------------

def test_ir_sensors_on_a_wall():
    data, origin = walled()
    data[:, 60:62] = 100  # face at x = 1.0
    grid = OccupancyGrid(data, RES, origin)
    ring = IRSensorRing()
    gap = 0.35  # robot centre to wall face
    d = ring.distances(World(grid), (1.0 - gap, 0.2, 0.0))
    # sensor i at radius r, looking along 40 deg * i: (gap / cos a) - r where that is within 4-30 cm
    assert d[0] == pytest.approx(gap - 0.185, abs=1e-9)
    assert d[1] == pytest.approx(gap / math.cos(math.radians(40)) - 0.185, abs=1e-9)
    assert d[8] == pytest.approx(d[1], abs=1e-9)
    assert np.all(d[2:8] == 0.30)  # nothing within 30 cm: the reading saturates
    # turned by 40 deg, sensor 8 (320 deg) faces the wall 1.5 cm away: below the GP2D120's 4 cm,
    # the reading is clipped; sensor 0 now looks at 40 deg
    d = ring.distances(World(grid), (1.0 - 0.2, 0.2, math.radians(40)))
    assert d[8] == 0.04
    assert d[0] == pytest.approx(0.2 / math.cos(math.radians(40)) - 0.185, abs=1e-9)


def test_bumper_contact_when_the_footprint_overlaps_a_cell():
    data, origin = walled()
    data[:, 60:62] = 100  # face at x = 1.0
    grid = World(OccupancyGrid(data, RES, origin))
    bumper = Bumper()
    assert not bumper.contact(grid, (1.0 - 0.185 - 0.002, 0.0, 0.0))
    assert bumper.contact(grid, (1.0 - 0.185 + 0.002, 0.0, 0.0))
    # a single cell met by the circle's diagonal: the cell's corner decides, not its bounding box
    data, origin = walled()
    data[40, 40] = 100  # cell [0, 0.05] x [0, 0.05]
    one = World(OccupancyGrid(data, RES, origin))
    k = 0.185 / math.sqrt(2)
    assert bumper.contact(one, (-k + 0.001, -k + 0.001, 0.0))
    assert not bumper.contact(one, (-k - 0.001, -k - 0.001, 0.0))
    assert not bumper.contact(one, (5.0, 5.0, 0.0))  # off the map


# -- the map format -----------------------------------------------------------------------------

def write_map(tmp_path, pixels, img_mode="L", **keys):
    img = tmp_path / "m.png"
    Image.fromarray(np.asarray(pixels, dtype=np.uint8), mode=img_mode).save(img)
    yaml = {"image": "m.png", "resolution": 0.1, "origin": "[1.0, 2.0, 0.0]", "negate": 0, "occupied_thresh": 0.65,
            "free_thresh": 0.25, **keys}
    text = "".join(f"{k}: {v}\n" for k, v in yaml.items() if v is not None)
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


def test_image_row_zero_is_the_top_of_the_map(tmp_path):
    # 3 wide, 2 high; one black pixel at the image's top-left
    grid = load_map(write_map(tmp_path, [[0, 254, 254], [254, 254, 254]]))
    assert (grid.width, grid.height) == (3, 2)
    assert grid.data[1, 0] == 100 and (grid.data == 100).sum() == 1  # row 1 from the bottom, column 0
    assert grid.cell_center(0, 1) == pytest.approx([1.05, 2.15])
    assert grid.origin == (1.0, 2.0, 0.0)


def test_the_origin_yaw_rotates_the_grid_about_its_corner(tmp_path):
    grid = load_map(write_map(tmp_path, [[0, 254, 254], [254, 254, 254]], origin="[1.0, 2.0, 1.5707963267948966]"))
    # cell (0, 1): u = 0.05, v = 0.15 in the grid's frame; rotated +90 deg: (-0.15, +0.05)
    assert grid.cell_center(0, 1) == pytest.approx([1.0 - 0.15, 2.0 + 0.05])
    # a beam along -x from the left hits that cell's face at x = 1.0 - 0.1
    r = cast(grid, grid.blocking(), [(1.5, 2.05)], [math.pi], 5.0)[0]
    assert r == pytest.approx(1.5 - 0.9, abs=1e-9)
    # and a beam along -x at y = 2.25 passes beside it (the grid is 0.2 m wide there: y in [2.0, 2.3])
    assert cast(grid, grid.blocking(), [(1.5, 2.25)], [math.pi], 5.0)[0] == math.inf


def test_trinary_scale_raw_and_negate_follow_map_io():
    grey = np.array([[0, 89, 90, 191, 192, 255, 100, 101]], dtype=np.uint8)
    # occ = 1 - g/255: 1.0, 0.651, 0.647, 0.251, 0.247, 0.0, 0.608, 0.604
    tri = occupancy_from_pixels(grey, mode="trinary")[0]
    assert tri.tolist() == [100, 100, -1, -1, 0, 0, -1, -1]
    scale = occupancy_from_pixels(grey, mode="scale")[0]
    # (occ - 0.25) / 0.4 * 100, rounded half away from zero
    assert scale.tolist() == [100, 100, 99, 0, 0, 0, 89, 88]
    raw = occupancy_from_pixels(grey, mode="raw")[0]
    assert raw.tolist() == [0, 89, 90, -1, -1, -1, 100, -1]
    neg = occupancy_from_pixels(grey, mode="trinary", negate=True)[0]  # occ = g/255
    assert neg.tolist() == [0, -1, -1, 100, 100, 100, -1, -1]
    # a threshold met exactly counts (>= occupied, <= free): g = 51 gives occ = 0.8 in float
    assert occupancy_from_pixels(np.array([[51]]), occupied_thresh=0.8)[0, 0] == 100


def test_transparent_pixels_are_unknown_except_in_raw_mode(tmp_path):
    la = np.zeros((1, 2, 2), dtype=np.uint8)
    la[0, :, 1] = [255, 100]  # opaque black, half-transparent black
    path = write_map(tmp_path, la, img_mode="LA")
    assert load_map(path).data[0].tolist() == [100, -1]
    path.write_text(path.read_text() + "mode: RAW\n")  # the mode is read in any case
    assert load_map(path).data[0].tolist() == [0, 0]


def test_negate_as_boolean_and_mode_defaults_to_trinary(tmp_path):
    path = write_map(tmp_path, [[0, 254]], negate="true")
    assert load_map(path).data[0].tolist() == [0, 100]


def test_numbers_are_read_from_their_text_as_map_server_reads_them(tmp_path):
    """yaml-cpp converts a scalar by its text (a C++ stream): 5e-2 (a string to YAML 1.1) is a
    resolution, "0" and 0x1 are negate values."""
    grid = load_map(write_map(tmp_path, [[0, 254]], resolution="5e-2", origin="[1e0, '2', -0.]", negate='"0"'))
    assert grid.resolution == 0.05 and grid.origin == (1.0, 2.0, 0.0) and grid.data[0].tolist() == [100, 0]
    assert load_map(write_map(tmp_path, [[0, 254]], negate="0x1")).data[0].tolist() == [0, 100]
    with pytest.raises(MapError, match=r"m\.yaml:2: resolution: must be a positive number .* got '5e-2x'"):
        load_map(write_map(tmp_path, [[0, 254]], resolution="5e-2x"))
    with pytest.raises(MapError, match=r"m\.yaml:4: negate: must be an integer or a boolean, got '08'"):
        load_map(write_map(tmp_path, [[0, 254]], negate="'08'"))  # octal by its leading 0: 8 is not a digit


def test_values_are_read_as_yaml_cpp_reads_them_not_as_yaml_1_1(tmp_path):
    """map_server's yaml-cpp takes y/N/"true" for a boolean negate and reads a number as a C++
    stream: YAML 1.1's hex, underscore and base-60 forms, which PyYAML would turn into numbers,
    are no numbers to it."""
    for word, negated in (("y", True), ("N", False), ('"true"', True), ("Off", False)):
        assert load_map(write_map(tmp_path, [[0, 254]], negate=word)).data[0].tolist() == \
            ([0, 100] if negated else [100, 0]), word
    with pytest.raises(MapError, match="negate: must be an integer or a boolean, got 'yEs'"):
        load_map(write_map(tmp_path, [[0, 254]], negate="yEs"))
    for key, text in (("resolution", "0x10"), ("resolution", "1_0"), ("origin", "[1:30, 0, 0]")):
        with pytest.raises(MapError, match=f"{key}: must be"):
            load_map(write_map(tmp_path, [[0, 254]], **{key: text}))


def test_a_png_transparent_colour_is_unknown_as_an_alpha_channel(tmp_path):
    """A grey PNG whose tRNS chunk makes level 254 transparent: GraphicsMagick reads it with an
    alpha channel, so map_server marks those pixels unknown."""
    path = write_map(tmp_path, [[0]])  # its YAML; the picture:
    Image.fromarray(np.array([[0, 254, 200]], dtype=np.uint8), mode="L").save(tmp_path / "m.png", transparency=254)
    assert load_map(path).data[0].tolist() == [100, -1, 0]  # the opaque 200 is free: occ 0.22


def test_a_home_map_path_and_an_image_named_from_the_map_folder(tmp_path, monkeypatch):
    """As map_server: ~/ at the start of the map's path is $HOME; the image is relative to the map's
    folder unless it starts with /, even when it starts with ~/."""
    home = tmp_path / "home"
    (home / "~").mkdir(parents=True)
    path = write_map(home, [[0, 0]], image="~/m.png")
    Image.fromarray(np.array([[254, 254]], dtype=np.uint8)).save(home / "~" / "m.png")
    monkeypatch.setenv("HOME", str(home))
    assert load_map("~/m.yaml").data[0].tolist() == [0, 0]  # <map folder>/~/m.png: free
    assert load_map(path).data[0].tolist() == [0, 0]


def test_map_files_no_text_or_too_large_are_named(tmp_path):
    path = write_map(tmp_path, [[0, 254]])
    path.write_bytes(path.read_bytes() + b"# caf\xe9\n")
    with pytest.raises(MapError, match=r"m\.yaml: not a text file \(UTF-8\)"):
        load_map(path)
    path = write_map(tmp_path, [[0, 254]], image="big.pgm")
    (tmp_path / "big.pgm").write_bytes(b"P5 20000 20000 255\n" + bytes(16))  # a header of 400 M pixels
    with pytest.raises(MapError, match=r"m\.yaml:1: image: cannot read .*big\.pgm: more pixels than"):
        load_map(path)


@pytest.mark.parametrize("keys,message", [
    ({"origin": "[1.0, 2.0]"}, r"m\.yaml:3: origin: must be \[x, y, yaw\] with 3 elements, not 2"),
    ({"resolution": 0}, r"m\.yaml:2: resolution: must be a positive number"),
    ({"mode": "ternary"}, r"m\.yaml:7: mode: must be one of trinary, scale, raw, got 'ternary'"),
    ({"negate": "maybe"}, r"m\.yaml:4: negate: must be an integer or a boolean"),
    ({"free_thresh": None}, r"m\.yaml: missing key 'free_thresh'"),
    ({"image": "nowhere.pgm"}, r"m\.yaml:1: image: cannot read .*nowhere\.pgm"),
])
def test_bad_map_files_are_refused_naming_file_line_and_key(tmp_path, keys, message):
    with pytest.raises(MapError, match=message):
        load_map(write_map(tmp_path, [[0, 254]], **keys))


def test_a_missing_map_file_is_named(tmp_path):
    with pytest.raises(MapError, match=r"nothing\.yaml: cannot read the map file"):
        load_map(tmp_path / "nothing.yaml")


# -- the shipped arena ----------------------------------------------------------------------------

def test_the_packaged_arena_is_walled_at_three_metres_with_its_boxes():
    grid = load_map(ROOT / "config" / "maps" / "rcll_arena.yaml")
    world = World(grid)
    assert (grid.width, grid.height, grid.resolution) == (124, 124, 0.05)
    r = world.ranges([(0.0, 0.0)] * 4, [0.0, math.pi / 2, math.pi, -math.pi / 2], 10.0)
    assert r == pytest.approx([3.0] * 4, abs=1e-9)
    # the box [1.15, 1.85] x [1.35, 1.70] on the diagonal: entered through its face y = 1.35
    assert world.ranges([(0.0, 0.0)], [math.pi / 4], 10.0)[0] == pytest.approx(1.35 * math.sqrt(2), abs=1e-9)
    assert not Bumper().contact(world, (0.0, 0.0, 0.0))


def test_ranges_agree_with_dense_sampling_on_random_rotated_maps():
    """An independent check of the traversal: along each beam, the point just past the range is in
    a blocking cell, and samples every 0.5 mm before it are all in free ones (random 15 % filled
    grids, rotated origins, random poses)."""
    rng = np.random.default_rng(3)
    for _ in range(4):
        data = np.where(rng.random((30, 40)) < 0.15, 100, 0).astype(np.int8)
        grid = OccupancyGrid(data, RES, (rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-math.pi, math.pi)))
        blocking = grid.blocking()
        origins = grid.cell_center(rng.uniform(0, 40, 50) - 0.5, rng.uniform(0, 30, 50) - 0.5)
        angles = rng.uniform(-math.pi, math.pi, 50)
        ranges = cast(grid, blocking, origins, angles, 5.0)

        def blocked(points):
            c = np.floor(grid.to_grid(points)).astype(int)
            inside = (c[..., 0] >= 0) & (c[..., 0] < 40) & (c[..., 1] >= 0) & (c[..., 1] < 30)
            out = np.zeros(inside.shape, bool)
            out[inside] = blocking[c[inside][:, 1], c[inside][:, 0]]
            return out

        for o, a, r in zip(origins, angles, ranges):
            d = np.array([math.cos(a), math.sin(a)])
            if math.isinf(r):
                t = np.arange(0.0, 5.0, 5e-4)
                assert not blocked(o + t[:, None] * d).any()
                continue
            assert blocked(o + (r + 1e-7) * d)
            t = np.arange(0.0, max(r - 1e-7, 0.0), 5e-4)
            assert not blocked(o + t[:, None] * d).any()
