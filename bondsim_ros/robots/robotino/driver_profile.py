"""The ROS interface of robocup-logistics/ros2-robotino, the Robotino driver of the RoboCup
Logistics League, as data: dynamics_node's ``interface: driver`` applies it
(bondsim_ros.twin.interface_profile reads it, bondsim_ros.ros.interface_profile serves it), so a
team's launch files, Nav2 parameters and nodes run against the twin unchanged.

Read from the driver's sources at commit dc2883a2dbc6231b5364f3ab0800133ab8b762f3:
rto_node/src/RTONode.cpp (parameters of robotino_node), OmniDriveROS.cpp (cmd_vel, the
velocity limits, cmd_vel_enable, set_velocity_limits, the bumper stop), MotorArrayROS.cpp
(joint_states, motor_readings), RTOOdometryNode.cpp and OdometryROS.cpp (odom, its frames and
transform, reset_odometry), launch/robotino_driver.launch.py (tf_prefix = namespace + '/', the
arguments and defaults it passes),
rto_description/urdf/robots/robotino_description.urdf (wheel joints about -1 0 0) and
rto_msgs/srv/*.srv.
"""

SOURCE = "robocup-logistics/ros2-robotino@dc2883a2dbc6231b5364f3ab0800133ab8b762f3"

DRIVER = {
    "source": SOURCE,
    # the driver's executables rto_node and rto_odometry_node are two nodes; the twin is one,
    # which takes the parameter file sections of both (bondsim-ros up --params)
    "node_name": "robotino_node",
    "merged_node_names": ["robotino_odometry_node"],
    # robotino_driver.launch.py: tf_prefix = namespace + '/' (bondsim-ros up --namespace does the same;
    # without a namespace that is "/", "/odom" for the driver, and no prefix for the twin: docs/ros.md)
    "frame_prefix_of_namespace": "{namespace}/",
    # OdometryROS::setFrameId: tf_prefix + "odom", tf_prefix + "base_link"
    "frames": {"odom": "odom", "base": "base_link"},
    "topics": {
        "cmd_vel": "cmd_vel",            # geometry_msgs/Twist (OmniDriveROS)
        "odom": "odom",                  # nav_msgs/Odometry (OdometryROS)
        "joint_states": "joint_states",  # sensor_msgs/JointState (MotorArrayROS)
        "motor_readings": "motor_readings",  # rto_msgs/MotorReadings (MotorArrayROS)
        "bumper": "bumper",              # std_msgs/Bool, subscribed for the bumper stop (OmniDriveROS)
    },
    "cmd_vel_type": "twist",
    "motor_readings_type": "rto_msgs/msg/MotorReadings",
    # MotorArrayROS::initMsgs publishes wheel2, wheel0, wheel1, names without tf_prefix; the
    # driver's URDF turns its wheels about -1 0 0, the twin's axles about 1 0 0; wheel0..2_joint
    # sit at 60, 180, -60 degrees, where the twin's wheel1..3_axle are
    "joints": [
        {"name": "wheel2_joint", "twin": "wheel3_axle", "sign": -1.0},
        {"name": "wheel0_joint", "twin": "wheel1_axle", "sign": -1.0},
        {"name": "wheel1_joint", "twin": "wheel2_axle", "sign": -1.0},
    ],
    # motor_readings: motors 0, 1, 2 drive wheel0..2_joint; joint speed = rpm / 16 * 2 pi / 60 and
    # angle = ticks / 16 / 2048 * 2 pi (MotorArrayROS, which writes pi as 3.142)
    "motors": {"joints": ["wheel0_joint", "wheel1_joint", "wheel2_joint"], "gear": 16.0,
               "ticks_per_motor_turn": 2048.0},
    # RTONode's declare_parameter defaults (robotino_node) and RTOOdometryNode's (tf_prefix and
    # publish_odom_tf, which a parameter file gives in robotino_odometry_node's section)
    "parameters": {
        "max_linear_vel": {"role": "max_linear", "default": 3.0,
                           "description": "largest |vx| and |vy| [m/s]: larger components are clipped to it"},
        "min_linear_vel": {"role": "min_linear", "default": 0.02,
                           "description": "smallest non-zero |vx| and |vy| [m/s]: smaller ones are raised to it"},
        "max_angular_vel": {"role": "max_angular", "default": 3.0,
                            "description": "largest |wz| [rad/s]: larger ones are clipped to it"},
        "min_angular_vel": {"role": "min_angular", "default": 0.07,
                            "description": "smallest non-zero |wz| [rad/s]: smaller ones are raised to it"},
        "tf_prefix": {"role": "frame_prefix", "default": "",
                      "description": "prefix of the odom and base_link frame ids (the driver's launch: namespace/)"},
        "publish_odom_tf": {"role": "publish_odom_tf", "default": True,
                            "description": "broadcast odom -> base_link on /tf (the driver's launch passes false: "
                                           "an EKF publishes it)"},
        "bumper_timeout": {"role": "bumper_timeout", "default": 5.0,
                           "description": "seconds cmd_vel is ignored after a bumper contact [s]; 0: no bumper "
                                          "stop, below 0 too, with a warning (OmniDriveROS.cpp:236-239)"},
    },
    # parameters of RTONode that have nothing to act on in the twin: declared with the driver's
    # defaults (`ros2 param get` reads them, a team's file or launch sets them), logged when
    # given, without effect
    "ignored_parameters": {
        "hostname": {"default": "172.26.1.1",
                     "description": "no effect in the twin (the robot's address, where the driver reaches its "
                                    "controld3; the twin runs in this process)"},
        # OmniDriveROS: a motor set to turn that reads speed 0 for motor_timeout s disables the drive
        # (0: never); the twin's motors turn as the model drives them, they cannot stall
        "motor_timeout": {"default": 10.0,
                          "description": "no effect in the twin (seconds a motor set to turn may read speed 0 "
                                         "before the driver disables the drive, 0: never; the twin's motors "
                                         "cannot stall)"},
    },
    # launch/robotino_driver.launch.py: the arguments that set robotino_node's parameters and the
    # defaults it gives them, which a robot started as teams start it runs with (driver.launch.py
    # declares them, bondsim-ros up --interface applies the defaults)
    "launch_arguments": {
        "launch_odom_tf": {"parameter": "publish_odom_tf", "default": False,
                           "description": "Whether to broadcast the tf for odom frame"},
        "bumper_timeout": {"parameter": "bumper_timeout", "default": 2.0,
                           "description": "Time to stop robot when bumper is hit"},
        "motor_timeout": {"parameter": "motor_timeout", "default": 0.0,
                          "description": "Time to stop robot when motor is not responding (no effect in the twin)"},
        "hostname": {"parameter": "hostname", "default": "172.26.1.1:12080",
                     "description": "ip address of robotino (no effect in the twin)"},
    },
    # service name -> what it does and the request/response fields it has (rto_msgs/srv/*.srv)
    "services": {
        "set_velocity_limits": {"role": "velocity_limits", "type": "rto_msgs/srv/SetVelLimits",
                                "fields": {"max_linear": "max_linear_vel", "min_linear": "min_linear_vel",
                                           "max_angular": "max_angular_vel", "min_angular": "min_angular_vel",
                                           "success": "success"}},
        "cmd_vel_enable": {"role": "enable", "type": "rto_msgs/srv/SetOmniDriveEnabled",
                           "fields": {"enable": "enable", "success": "success"}},
        "reset_odometry": {"role": "reset_odometry", "type": "rto_msgs/srv/ResetOdometry",
                           "fields": {"x": "x", "y": "y", "yaw": "phi"}},
    },
}
