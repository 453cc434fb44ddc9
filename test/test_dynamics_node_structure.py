"""DynamicsNode's attributes are all created in __init__ (each method's reader finds them there),
read from the source without rclpy."""
import ast
import inspect


def test_every_attribute_the_node_sets_is_created_in_init():
    import bondsim_ros.ros.dynamics_node as dn

    cls = next(n for n in ast.parse(inspect.getsource(dn)).body
               if isinstance(n, ast.ClassDef) and n.name == "DynamicsNode")
    in_init, elsewhere = set(), {}
    for f in cls.body:
        if not isinstance(f, ast.FunctionDef):
            continue
        for n in ast.walk(f):
            if (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)
                    and n.value.id == "self"):
                (in_init.add(n.attr) if f.name == "__init__" else elsewhere.setdefault(n.attr, set()).add(f.name))
    late = {a: sorted(fs) for a, fs in elsewhere.items() if a not in in_init}
    assert not late, f"attributes first set outside __init__: {late}"
