"""The dual-arm robot (Qian & Rahmani) in Pinocchio (an independent rigid-body library): the oracle the
tests hold the model's own Newton-Euler inverse dynamics (bondsim_ros.robots.dualarm.model.
newton_euler, which drives the bond graph and sets the servo gains) and the bond graph against.
Pinocchio reads the URDF that bondsim_ros.mechanism writes from the same mechanism XML."""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from bondsim_ros.robots.dualarm.model import ACTUATED, ROBOT_XML, joint_reference, reference_base, wheel_mapping


@functools.lru_cache(maxsize=2)
def pinocchio_model(xml: str = str(ROBOT_XML)):
    """(model, data, urdf path): URDF from the XML, root joint JointModelPlanar (x, y, yaw)."""
    import tempfile

    import pinocchio as pin

    from bondsim_ros.mechanism import to_urdf

    out = Path(tempfile.mkdtemp(prefix="dualarm_urdf_")) / "DualArm.urdf"
    to_urdf(xml, out)
    model = pin.buildModelFromUrdf(str(out), pin.JointModelPlanar())
    return model, model.createData(), out


def pin_vectors(model, base, q, qd, qdd):
    """Pinocchio q, v, a from base = (x, y, phi, vx, vy, w, ax, ay, dw) (body-frame velocities
    and their time derivatives) and joint dicts. Unlimited revolute joints are 'continuous' in
    the URDF, so Pinocchio stores them as (cos, sin)."""
    import pinocchio as pin

    qv, v, a = pin.neutral(model), np.zeros(model.nv), np.zeros(model.nv)
    x, y, phi, vx, vy, w, ax, ay, dw = base
    jid = model.getJointId("root_joint")
    iq, iv = model.idx_qs[jid], model.idx_vs[jid]
    qv[iq:iq + 4] = (x, y, math.cos(phi), math.sin(phi))
    v[iv:iv + 3] = (vx, vy, w)
    a[iv:iv + 3] = (ax, ay, dw)
    for n in ACTUATED:
        j = model.getJointId(n)
        iq, iv = model.idx_qs[j], model.idx_vs[j]
        if model.nqs[j] == 2:
            qv[iq:iq + 2] = (math.cos(q[n]), math.sin(q[n]))
        else:
            qv[iq] = q[n]
        v[iv], a[iv] = qd[n], qdd[n]
    return qv, v, a


def pinocchio_rnea(base, q, qd, qdd, xml: str = str(ROBOT_XML)) -> dict:
    """Generalized forces of RNEA by name: base 'Fx', 'Fy', 'Mz' (body frame) and each joint."""
    import pinocchio as pin

    model, data, _ = pinocchio_model(xml)
    qv, v, a = pin_vectors(model, base, q, qd, qdd)
    tau = pin.rnea(model, data, qv, v, a)
    iv = model.idx_vs[model.getJointId("root_joint")]
    out = dict(Fx=tau[iv], Fy=tau[iv + 1], Mz=tau[iv + 2])
    for n in ACTUATED:
        out[n] = tau[model.idx_vs[model.getJointId(n)]]
    return out


def pinocchio_torques(t) -> dict:
    """Joint torques and platform contact forces along the section V reference, by name, each
    an array over ``t``: Pinocchio RNEA + the wheel mapping."""
    t = np.atleast_1d(np.asarray(t, float))
    q, qd, qdd = joint_reference(t)
    rows = []
    for k, tk in enumerate(t):
        pick = lambda d: {n: float(d[n][k]) for n in d}  # noqa: E731
        gen = pinocchio_rnea(reference_base(tk), pick(q), pick(qd), pick(qdd))
        rows.append({**gen, **wheel_mapping(gen)})
    return {n: np.array([r[n] for r in rows]) for n in rows[0]}
