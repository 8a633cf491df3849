"""test_device_comm.py - the creation of a process group's CUDA device communicator, on 2
ranks (device_worker.py), where it must fail: with a plugin that does not exist (everywhere),
and with the built plugin but no CUDA device (where the machine has none). Each rank's error
must name the device, the communicator, the plugin, the status and the cause; its stderr
must hold the log line with the cause; the group must work on."""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402


def has_gpu():
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def case(name, env, plugin, cause):
    ranks = harness.run(os.path.join(HERE, "device_worker.py"), 2, ["fail", plugin, cause], env=env,
                        timeout=120)
    ok = harness.report(ranks, name)
    for k in ranks:
        if ok and cause not in k.err:
            print("%s: rank %d's stderr has no log line %r:\n%s" % (name, k.rank, cause, k.err))
            ok = False
    print("%s: %s" % (name, "ok" if ok else "FAILED"))
    return ok


def main():
    build = os.environ.get("CCTEST_BUILD_DIR", "")
    missing = "/nonexistent/libccomm-cuda-missing.so"
    ok = case("missing plugin", {"CCOMM_CUDA_PLUGIN": missing}, missing,
              "cannot load the CUDA plugin " + missing)
    plugin = os.path.join(build, "lib", "libccomm-cuda.so")
    if has_gpu():
        print("no-device case: skipped (this machine has a GPU; tests/gpu covers it)")
    elif not os.path.exists(plugin):
        print("no-device case: skipped (no CUDA plugin built at %s)" % plugin)
    else:
        ok = case("no device", {"CCOMM_CUDA_PLUGIN": plugin}, plugin,
                  "0:default_pg.cuda0: no CUDA device") and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
