/*
 * module.cpp - ccomm._C, the Python extension behind ccomm.torch: creating
 * the process groups (the bootstrap through PyTorch's store is done in
 * Python, python/ccomm/torch.py), the flight-recorder calls, and the opt-in
 * Python hooks on an op's record.
 */
#include <torch/csrc/utils/pybind.h>

#include "pg_ccomm.hpp"

#include <atomic>
#include <thread>

namespace py = pybind11;
using ccomm_torch::ProcessGroupCcomm;

namespace
{

c10::intrusive_ptr<ccomm_torch::PGBase> wrap(cc_comm_t *comm, const std::string &name,
                                             int64_t timeout_ms)
{
    return c10::make_intrusive<ProcessGroupCcomm>(comm, cc_comm_rank(comm), cc_comm_size(comm),
                                                  name, timeout_ms);
}

cc_comm_config_t config(const std::string &name, int64_t timeout_ms, const std::string &transport)
{
    cc_comm_config_t c = CC_COMM_CONFIG_INIT;
    c.name = name.c_str();
    c.timeout_ms = timeout_ms;
    c.transport = transport.empty() ? nullptr : transport.c_str();
    return c;
}

c10::intrusive_ptr<ccomm_torch::PGBase> newWorld(int rank, int size, const std::string &addr,
                                                 int64_t timeout_ms, const std::string &name,
                                                 const std::string &transport)
{
    cc_comm_t *comm = nullptr;
    cc_status_t st;
    {
        py::gil_scoped_release nogil; /* waits for the other ranks */
        cc_comm_config_t c = config(name, timeout_ms, transport);
        st = cc_comm_init(&comm, rank, size, addr.c_str(), &c);
    }
    TORCH_CHECK(st == CC_OK, "ccomm: joining process group ", name, " as rank ", rank, " of ", size,
                " at store ", addr, " failed: ", cc_status_name(st), " (", cc_status_str(st),
                "); the ccomm log line above says why");
    return wrap(comm, name, timeout_ms);
}

ProcessGroupCcomm *asCcomm(const c10::intrusive_ptr<ccomm_torch::PGBase> &pg, const char *arg)
{
    auto *p = dynamic_cast<ProcessGroupCcomm *>(pg.get());
    TORCH_CHECK_VALUE(p, "ccomm: ", arg, " is a process group of backend ",
                      pg ? pg->getBackendName() : std::string("(none)"), ", not ccomm");
    return p;
}

c10::intrusive_ptr<ccomm_torch::PGBase>
newSubgroup(const c10::intrusive_ptr<ccomm_torch::PGBase> &parent, std::vector<int> ranks,
            int64_t timeout_ms, const std::string &name)
{
    ProcessGroupCcomm *p = asCcomm(parent, "parent");
    cc_comm_t *comm = nullptr;
    cc_status_t st;
    {
        py::gil_scoped_release nogil;
        cc_comm_config_t c = config(name, timeout_ms, "");
        st = cc_comm_create_group(p->comm(), ranks.data(), (int)ranks.size(), &c, &comm);
    }
    TORCH_CHECK(st == CC_OK, "ccomm: creating process group ", name, " from ", p->name(),
                " failed: ", cc_status_name(st), " (", cc_status_str(st), ")");
    return wrap(comm, name, timeout_ms);
}

py::object record(const cc_op_info_t &i)
{
    py::dict d;
    d["op_id"] = i.op_id;
    d["name"] = cc_op_type_name(i.type);
    d["seq"] = i.coll_seq;
    d["p2p_seq"] = i.p2p_seq;
    d["group"] = i.comm_name ? i.comm_name : "";
    d["rank"] = i.rank;
    d["size"] = i.size;
    d["root"] = i.root;
    d["peer"] = i.peer;
    d["in_count"] = i.in_count;
    d["out_count"] = i.out_count;
    d["bytes"] = i.bytes;
    d["dtype"] =
        i.dtype < CC_DTYPE_COUNT ? py::object(py::str(cc_dtype_name(i.dtype))) : py::none();
    d["op"] = i.redop < CC_REDOP_COUNT ? py::object(py::str(cc_redop_name(i.redop))) : py::none();
    d["status"] = cc_status_name(i.status);
    d["duration_us"] = (i.t_start_ns && i.t_end_ns >= i.t_start_ns)
                           ? py::object(py::float_((double)(i.t_end_ns - i.t_start_ns) / 1e3))
                           : py::none();
    d["algorithm"] = i.algorithm ? py::object(py::str(i.algorithm)) : py::none();
    d["transport"] = i.transport ? py::object(py::str(i.transport)) : py::none();
    return d;
}

/* Python's exit: see PyGate (pg_ccomm.hpp). */
using ccomm_torch::g_py_exiting;
using ccomm_torch::g_py_in;
using ccomm_torch::PyGate;

void pythonExiting()
{
    g_py_exiting.store(true);
    py::gil_scoped_release nogil; /* a hook that got in may be waiting for the GIL */
    while (g_py_in.load() != 0)
        std::this_thread::yield();
}

/* A Python callable as an OpHook: takes the GIL, and is released with the GIL held. An
 * exception in the callable is printed, never propagated into ccomm. Once Python exits the
 * hook is skipped and the callable is left to the dying interpreter. */
ccomm_torch::OpHook pyHook(py::function fn)
{
    auto holder = std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object *o) {
        PyGate gate;
        if (!gate.open || !Py_IsInitialized()) return; /* leaked: Python is going away */
        py::gil_scoped_acquire g;
        delete o;
    });
    return [holder](const cc_op_info_t &info) {
        PyGate gate;
        if (!gate.open) return;
        py::gil_scoped_acquire g;
        try {
            (*holder)(record(info));
        } catch (py::error_already_set &e) {
            e.discard_as_unraisable("ccomm hook");
        }
    };
}

} // namespace

PYBIND11_MODULE(_C, m)
{
    m.doc() = "ccomm's PyTorch adapter (use ccomm.torch)";
    py::module::import("torch.distributed");
    m.def("new_world", &newWorld, py::arg("rank"), py::arg("size"), py::arg("store_addr"),
          py::arg("timeout_ms"), py::arg("name"), py::arg("transport") = "");
    m.def("new_subgroup", &newSubgroup, py::arg("parent"), py::arg("ranks"), py::arg("timeout_ms"),
          py::arg("name"));
    m.def("add_pre_hook", [](const c10::intrusive_ptr<ccomm_torch::PGBase> &pg, py::function fn) {
        asCcomm(pg, "group")->addPreHook(pyHook(std::move(fn)));
    });
    m.def("add_post_hook", [](const c10::intrusive_ptr<ccomm_torch::PGBase> &pg, py::function fn) {
        asCcomm(pg, "group")->addPostHook(pyHook(std::move(fn)));
    });
    m.def("comm_name", [](const c10::intrusive_ptr<ccomm_torch::PGBase> &pg) {
        return std::string(cc_comm_name(asCcomm(pg, "group")->comm()));
    });
    m.def("is_ccomm", [](const c10::intrusive_ptr<ccomm_torch::PGBase> &pg) {
        return dynamic_cast<ProcessGroupCcomm *>(pg.get()) != nullptr;
    });
    m.def("dump", [](py::object path) {
        std::string p = path.is_none() ? std::string() : py::str(path).cast<std::string>();
        cc_status_t st;
        {
            py::gil_scoped_release nogil;
            st = cc_recorder_dump(p.empty() ? nullptr : p.c_str());
        }
        TORCH_CHECK(st == CC_OK, "ccomm: dump", p.empty() ? "" : " to ", p,
                    " failed: ", cc_status_name(st), " (", cc_status_str(st), ")");
    });
    m.def("ring_path", []() -> py::object {
        const char *p = cc_recorder_ring_path();
        return p ? py::object(py::str(p)) : py::none();
    });
    m.def("version", []() { return std::string(CC_VERSION_STRING); });
    m.def("has_cuda", []() { return CCOMM_TORCH_CUDA != 0; });
    m.def("_python_exiting", &pythonExiting,
          "atexit: from now on ccomm's threads never take the GIL (Python hooks are skipped)");
    /* Tests only: make (or get) the group's communicator of CUDA device `ordinal`, the path a
     * group's first op on a CUDA tensor takes, reachable without a CUDA torch. Collective
     * over the group. Returns the device communicator's name. */
    m.def("_device_comm", [](const c10::intrusive_ptr<ccomm_torch::PGBase> &pg, int ordinal) {
        ProcessGroupCcomm *p = asCcomm(pg, "group");
        cc_comm_t *c;
        {
            py::gil_scoped_release nogil; /* waits for the other ranks */
            c = p->deviceComm(ordinal);
        }
        return std::string(cc_comm_name(c));
    });
}
