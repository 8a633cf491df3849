/*
 * ops.cpp - the c10d methods of the "ccomm" process group, each mapped onto
 * one ccomm call.
 *
 * PyTorch hands lists of tensors that need not be contiguous nor packed;
 * ccomm takes flat buffers. Each method checks its arguments first (a
 * Python exception naming the argument and the value; nothing is issued),
 * stages what is not contiguous or not packed into one buffer, issues the
 * call with a work handle on the tensors' device (device.cpp: CPU, or a CUDA
 * device communicator and the current stream), and leaves the copy back to the
 * completion thread (Work::finish_fn; a CUDA op's runs right after its enqueue,
 * pg_ccomm.cpp). Ops that only move bytes (broadcast, gathers, scatters,
 * all-to-all, send/recv) carry any dtype, as bytes when ccomm has no such
 * type; reductions take the dtypes ccomm's kernels reduce.
 */
#include "pg_ccomm.hpp"

#include <algorithm>

namespace ccomm_torch
{

using c10d::OpType;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

/* ---- argument checks and mappings ------------------------------------------------------ */

/* ccomm's type for t, or CC_DTYPE_COUNT when ccomm has none (then bytes are moved). */
static cc_dtype_t mapDtype(at::ScalarType st)
{
    switch (st) {
    case at::kFloat:
        return CC_FLOAT32;
    case at::kDouble:
        return CC_FLOAT64;
    case at::kHalf:
        return CC_FLOAT16;
    case at::kBFloat16:
        return CC_BFLOAT16;
    case at::kChar:
        return CC_INT8;
    case at::kShort:
        return CC_INT16;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
    case at::kUInt16: /* torch.uint16 exists since torch 2.3 (compile-checked: torch2_headers) */
        return CC_UINT16;
#endif
    case at::kByte:
        return CC_UINT8;
    case at::kBool:
        return CC_UINT8;
    case at::kInt:
        return CC_INT32;
    case at::kLong:
        return CC_INT64;
    default:
        return CC_DTYPE_COUNT;
    }
}

cc_dtype_t toCcDtype(const at::Tensor &t, const char *arg, bool reducing)
{
    cc_dtype_t d = mapDtype(t.scalar_type());
    if (d == CC_DTYPE_COUNT && reducing)
        TORCH_CHECK_VALUE(false, "ccomm: ", arg, " has dtype ", t.scalar_type(),
                          ", which ccomm cannot reduce (it reduces float32/64, float16, bfloat16, "
                          "int8, uint8, int16, int32, int64 and bool)");
    return d;
}

static bool isFloat(at::ScalarType st)
{
    return at::isFloatingType(st);
}

static const char *opName(c10d::ReduceOp::RedOpType o)
{
    static const char *const n[] = {"SUM",  "AVG", "PRODUCT", "MIN",       "MAX",
                                    "BAND", "BOR", "BXOR",    "PREMUL_SUM"};
    return o < 9 ? n[o] : "UNUSED";
}

cc_redop_t toCcRedop(const c10d::ReduceOp &op, at::ScalarType st, double *premul)
{
    auto o = op.op_;
    bool b = st == at::kBool;
    if ((o == c10d::ReduceOp::BAND || o == c10d::ReduceOp::BOR || o == c10d::ReduceOp::BXOR) &&
        isFloat(st))
        TORCH_CHECK_VALUE(false, "ccomm: op ReduceOp.", opName(o), " is not defined for dtype ", st,
                          " (bitwise ops take integer or bool tensors)");
    if (b && (o == c10d::ReduceOp::AVG || o == c10d::ReduceOp::PREMUL_SUM))
        TORCH_CHECK_VALUE(false, "ccomm: op ReduceOp.", opName(o), " is not defined for dtype ",
                          st);
    switch (o) {
    case c10d::ReduceOp::SUM:
        return b ? CC_MAX : CC_SUM; /* a logical or, as NCCL's backend */
    case c10d::ReduceOp::AVG:
        return CC_AVG;
    case c10d::ReduceOp::PRODUCT:
        return b ? CC_MIN : CC_PROD; /* a logical and */
    case c10d::ReduceOp::MIN:
        return CC_MIN;
    case c10d::ReduceOp::MAX:
        return CC_MAX;
    case c10d::ReduceOp::BAND:
        return CC_BAND;
    case c10d::ReduceOp::BOR:
        return CC_BOR;
    case c10d::ReduceOp::BXOR:
        return CC_BXOR;
    case c10d::ReduceOp::PREMUL_SUM: {
        auto *s = dynamic_cast<c10d::NCCLPreMulSumSupplement *>(op.supplement_.get());
        TORCH_CHECK_VALUE(s, "ccomm: ReduceOp.PREMUL_SUM without its factor (make it with "
                             "torch.distributed._make_nccl_premul_sum)");
        /* torch 1.13 keeps the factor in a vector tensor_factors, torch 2.x in one
         * tensor_factor; either may live on the op's device (item() copies it to the host). */
#if TORCH_VERSION_MAJOR >= 2
        *premul = s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
#else
        *premul =
            s->tensor_factors.empty() ? s->double_factor : s->tensor_factors[0].item<double>();
#endif
        return CC_PREMUL_SUM;
    }
    default:
        TORCH_CHECK_VALUE(false, "ccomm: op ReduceOp.", opName(o), " is not supported");
    }
    return CC_REDOP_COUNT;
}

static const at::Tensor &single(std::vector<at::Tensor> &ts, const char *fn, const char *arg)
{
    TORCH_CHECK_VALUE(ts.size() == 1, "ccomm: ", fn, ": ", arg, " holds ", ts.size(),
                      " tensors; ccomm takes one tensor per process");
    checkTensor(ts[0], arg);
    return ts[0];
}

/* A tensor as ccomm buffer: its own type, or its bytes when ccomm has no such type. */
struct Flat {
    cc_dtype_t dt;
    size_t count;
};

static Flat flat(const at::Tensor &t, cc_dtype_t dt)
{
    if (dt == CC_DTYPE_COUNT) return {CC_UINT8, (size_t)t.numel() * t.element_size()};
    return {dt, (size_t)t.numel()};
}

/* t itself if contiguous, else a contiguous copy; `staged` says which. */
static at::Tensor dense(const at::Tensor &t, bool *staged)
{
    *staged = !t.is_contiguous();
    return *staged ? t.contiguous() : t;
}

static void checkSame(const at::Tensor &ref, const at::Tensor &t, const char *fn, const char *arg,
                      size_t i, bool shape)
{
    checkTensor(t, arg);
    checkSameDevice(ref, t, fn, arg);
    TORCH_CHECK_VALUE(t.scalar_type() == ref.scalar_type(), "ccomm: ", fn, ": ", arg, "[", i,
                      "] has dtype ", t.scalar_type(), ", expected ", ref.scalar_type());
    if (shape)
        TORCH_CHECK_VALUE(t.numel() == ref.numel(), "ccomm: ", fn, ": ", arg, "[", i, "] has ",
                          t.numel(), " elements, expected ", ref.numel());
}

static void checkRoot(int64_t root, int size, const char *fn)
{
    TORCH_CHECK_VALUE(root >= 0 && root < size, "ccomm: ", fn, ": root rank ", root,
                      " is out of range 0..", size - 1);
}

/* ---- collectives ----------------------------------------------------------------------- */

WorkPtr ProcessGroupCcomm::allreduce(std::vector<at::Tensor> &tensors,
                                     const c10d::AllreduceOptions &opts)
{
    const at::Tensor &t = single(tensors, "allreduce", "tensors");
    cc_dtype_t dt = toCcDtype(t, "tensors[0]", true);
    cc_op_opts_t o = opOpts(opts.timeout);
    cc_redop_t op = toCcRedop(opts.reduceOp, t.scalar_type(), &o.premul_scalar);
    bool staged;
    at::Tensor buf = dense(t, &staged);
    Target tg = target(t, &o);
    auto w = newWork(OpType::ALLREDUCE, tensors, tg.device);
    w->keep = {buf};
    if (staged) w->finish_fn = [t, buf]() mutable { t.copy_(buf); };
    coll_issued_++;
    return submit(w,
                  cc_allreduce(tg.comm, buf.data_ptr(), buf.data_ptr(), buf.numel(), dt, op, &o,
                               slot(w, buf.nbytes())),
                  "all_reduce");
}

WorkPtr ProcessGroupCcomm::allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                               const c10d::AllreduceCoalescedOptions &opts)
{
    TORCH_CHECK_VALUE(!tensors.empty(), "ccomm: allreduce_coalesced: tensors is empty");
    checkTensor(tensors[0], "tensors[0]");
    cc_dtype_t dt = toCcDtype(tensors[0], "tensors[0]", true);
    cc_op_opts_t o = opOpts(opts.timeout);
    cc_redop_t op = toCcRedop(opts.reduceOp, tensors[0].scalar_type(), &o.premul_scalar);
    Target tg = target(tensors[0], &o);
    auto w = newWork(OpType::ALLREDUCE_COALESCED, tensors, tg.device);
    std::vector<void *> bufs;
    std::vector<size_t> counts;
    std::vector<std::pair<at::Tensor, at::Tensor>> back;
    for (size_t i = 0; i < tensors.size(); i++) {
        checkSame(tensors[0], tensors[i], "allreduce_coalesced", "tensors", i, false);
        bool staged;
        at::Tensor b = dense(tensors[i], &staged);
        if (staged) back.emplace_back(tensors[i], b);
        w->keep.push_back(b);
        bufs.push_back(b.data_ptr());
        counts.push_back(b.numel());
    }
    if (!back.empty())
        w->finish_fn = [back]() mutable {
            for (auto &p : back)
                p.first.copy_(p.second);
        };
    coll_issued_++;
    return submit(w,
                  cc_allreduce_coalesced(tg.comm, bufs.data(), bufs.data(), counts.data(),
                                         (int)bufs.size(), dt, op, &o, &w->cw),
                  "allreduce_coalesced");
}

WorkPtr ProcessGroupCcomm::broadcast(std::vector<at::Tensor> &tensors,
                                     const c10d::BroadcastOptions &opts)
{
    const at::Tensor &t = single(tensors, "broadcast", "tensors");
    checkRoot(opts.rootRank, getSize(), "broadcast");
    Flat f = flat(t, toCcDtype(t, "tensors[0]", false));
    bool staged;
    at::Tensor buf = dense(t, &staged);
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(t, &o);
    auto w = newWork(OpType::BROADCAST, tensors, tg.device);
    w->keep = {buf};
    if (staged) w->finish_fn = [t, buf]() mutable { t.copy_(buf); };
    coll_issued_++;
    return submit(w,
                  cc_broadcast(tg.comm, buf.data_ptr(), buf.data_ptr(), f.count, f.dt,
                               (int)opts.rootRank, &o, slot(w, buf.nbytes())),
                  "broadcast");
}

WorkPtr ProcessGroupCcomm::reduce(std::vector<at::Tensor> &tensors, const c10d::ReduceOptions &opts)
{
    const at::Tensor &t = single(tensors, "reduce", "tensors");
    checkRoot(opts.rootRank, getSize(), "reduce");
    cc_dtype_t dt = toCcDtype(t, "tensors[0]", true);
    cc_op_opts_t o = opOpts(opts.timeout);
    cc_redop_t op = toCcRedop(opts.reduceOp, t.scalar_type(), &o.premul_scalar);
    bool staged;
    at::Tensor buf = dense(t, &staged);
    bool root = getRank() == opts.rootRank;
    Target tg = target(t, &o);
    auto w = newWork(OpType::REDUCE, tensors, tg.device);
    w->keep = {buf};
    if (staged && root) w->finish_fn = [t, buf]() mutable { t.copy_(buf); };
    coll_issued_++;
    return submit(w,
                  cc_reduce(tg.comm, buf.data_ptr(), root ? buf.data_ptr() : nullptr, buf.numel(), dt,
                            op, (int)opts.rootRank, &o, slot(w, buf.nbytes())),
                  "reduce");
}

/* A packed buffer of n blocks like `like`, and the copy of its blocks into `outs`. */
static at::Tensor packedFor(const at::Tensor &like, size_t n)
{
    return at::empty({(int64_t)n * like.numel()},
                     like.options().memory_format(at::MemoryFormat::Contiguous));
}

static std::function<void()> unpackTo(std::vector<at::Tensor> outs, at::Tensor packed)
{
    return [outs, packed]() mutable {
        int64_t off = 0;
        for (auto &o : outs) {
            o.copy_(packed.narrow(0, off, o.numel()).view(o.sizes()));
            off += o.numel();
        }
    };
}

WorkPtr ProcessGroupCcomm::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                     std::vector<at::Tensor> &inputs,
                                     const c10d::AllgatherOptions &opts)
{
    const at::Tensor &in = single(inputs, "allgather", "input_tensor");
    TORCH_CHECK_VALUE(outputs.size() == 1, "ccomm: allgather: output_tensor_lists holds ",
                      outputs.size(), " lists; ccomm takes one per process");
    auto &outs = outputs[0];
    TORCH_CHECK_VALUE(outs.size() == (size_t)getSize(), "ccomm: allgather: tensor_list holds ",
                      outs.size(), " tensors, expected the group size ", getSize());
    for (size_t i = 0; i < outs.size(); i++)
        checkSame(in, outs[i], "allgather", "tensor_list", i, true);
    Flat f = flat(in, toCcDtype(in, "input_tensor", false));
    bool staged;
    at::Tensor src = dense(in, &staged);
    at::Tensor packed = packedFor(in, outs.size());
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(in, &o);
    auto w = newWork(OpType::ALLGATHER, outs, tg.device);
    w->keep = {src, packed};
    w->finish_fn = unpackTo(outs, packed);
    coll_issued_++;
    return submit(w,
                  cc_allgather(tg.comm, src.data_ptr(), packed.data_ptr(), f.count, f.dt, &o,
                               slot(w, packed.nbytes())),
                  "all_gather");
}

WorkPtr ProcessGroupCcomm::_allgather_base(at::Tensor &output, at::Tensor &input,
                                           const c10d::AllgatherOptions &opts)
{
    checkTensor(input, "input_tensor");
    checkTensor(output, "output_tensor");
    checkSameDevice(input, output, "all_gather_into_tensor", "output_tensor");
    TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(),
                      "ccomm: all_gather_into_tensor: "
                      "output_tensor has dtype ",
                      output.scalar_type(), ", input_tensor ", input.scalar_type());
    TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize(),
                      "ccomm: all_gather_into_tensor: "
                      "output_tensor has ",
                      output.numel(), " elements, expected ", getSize(), " x ", input.numel());
    Flat f = flat(input, toCcDtype(input, "input_tensor", false));
    bool si, so;
    at::Tensor src = dense(input, &si), dst = dense(output, &so);
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(input, &o);
    auto w = newWork(OpType::_ALLGATHER_BASE, {output}, tg.device);
    w->keep = {src, dst};
    if (so) w->finish_fn = [output, dst]() mutable { output.copy_(dst); };
    coll_issued_++;
    return submit(w,
                  cc_allgather(tg.comm, src.data_ptr(), dst.data_ptr(), f.count, f.dt, &o,
                               slot(w, dst.nbytes())),
                  "all_gather_into_tensor");
}

WorkPtr ProcessGroupCcomm::allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                               std::vector<at::Tensor> &inputs,
                                               const c10d::AllgatherOptions &opts)
{
    TORCH_CHECK_VALUE(!inputs.empty() && outputs.size() == inputs.size(),
                      "ccomm: "
                      "allgather_coalesced: ",
                      outputs.size(), " output lists for ", inputs.size(),
                      " inputs; need one list per input");
    for (size_t i = 0; i < inputs.size(); i++) {
        checkTensor(inputs[i], "input_list");
        checkSameDevice(inputs[0], inputs[i], "allgather_coalesced", "input_list");
        TORCH_CHECK_VALUE(outputs[i].size() == (size_t)getSize(),
                          "ccomm: allgather_coalesced: "
                          "output_lists[",
                          i, "] holds ", outputs[i].size(), " tensors, expected ", getSize());
        for (size_t r = 0; r < outputs[i].size(); r++)
            checkSame(inputs[i], outputs[i][r], "allgather_coalesced", "output_lists[i]", r, true);
    }
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(inputs[0], &o);
    auto w = newWork(OpType::ALLGATHER_COALESCED, {}, tg.device);
    std::vector<const void *> sb;
    std::vector<void *> rb;
    std::vector<size_t> counts;
    std::vector<std::function<void()>> unpack;
    for (size_t i = 0; i < inputs.size(); i++) {
        bool staged;
        at::Tensor src = dense(inputs[i], &staged);
        at::Tensor packed = packedFor(inputs[i], getSize());
        w->keep.push_back(src);
        w->keep.push_back(packed);
        sb.push_back(src.data_ptr());
        rb.push_back(packed.data_ptr());
        counts.push_back((size_t)src.numel() * src.element_size()); /* bytes: dtypes may differ */
        unpack.push_back(unpackTo(outputs[i], packed));
    }
    w->finish_fn = [unpack]() {
        for (auto &u : unpack)
            u();
    };
    coll_issued_++;
    return submit(w,
                  cc_allgather_coalesced(tg.comm, sb.data(), rb.data(), counts.data(), (int)sb.size(),
                                         CC_UINT8, &o, &w->cw),
                  "allgather_coalesced");
}

WorkPtr ProcessGroupCcomm::gather(std::vector<std::vector<at::Tensor>> &outputs,
                                  std::vector<at::Tensor> &inputs, const c10d::GatherOptions &opts)
{
    const at::Tensor &in = single(inputs, "gather", "tensor");
    checkRoot(opts.rootRank, getSize(), "gather");
    bool root = getRank() == opts.rootRank;
    if (root) {
        TORCH_CHECK_VALUE(outputs.size() == 1 && outputs[0].size() == (size_t)getSize(),
                          "ccomm: gather: gather_list on the root must hold ", getSize(),
                          " tensors, it holds ", outputs.empty() ? 0 : outputs[0].size());
        for (size_t i = 0; i < outputs[0].size(); i++)
            checkSame(in, outputs[0][i], "gather", "gather_list", i, true);
    } else {
        TORCH_CHECK_VALUE(outputs.empty() || outputs[0].empty(),
                          "ccomm: gather: gather_list must "
                          "be empty on rank ",
                          getRank(), ", which is not the root");
    }
    Flat f = flat(in, toCcDtype(in, "tensor", false));
    bool staged;
    at::Tensor src = dense(in, &staged);
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(in, &o);
    auto w = newWork(OpType::GATHER, root ? outputs[0] : std::vector<at::Tensor>{}, tg.device);
    w->keep = {src};
    void *dst = nullptr;
    if (root) {
        at::Tensor packed = packedFor(in, getSize());
        w->keep.push_back(packed);
        w->finish_fn = unpackTo(outputs[0], packed);
        dst = packed.data_ptr();
    }
    coll_issued_++;
    return submit(w,
                  cc_gather(tg.comm, src.data_ptr(), dst, f.count, f.dt, (int)opts.rootRank, &o,
                            slot(w, src.nbytes() * getSize())),
                  "gather");
}

/* One packed contiguous tensor of the list's tensors, in order. */
static at::Tensor pack(const std::vector<at::Tensor> &ts)
{
    std::vector<at::Tensor> flat;
    for (auto &t : ts)
        flat.push_back(t.reshape({-1}));
    return at::cat(flat);
}

WorkPtr ProcessGroupCcomm::scatter(std::vector<at::Tensor> &outputs,
                                   std::vector<std::vector<at::Tensor>> &inputs,
                                   const c10d::ScatterOptions &opts)
{
    const at::Tensor &out = single(outputs, "scatter", "tensor");
    checkRoot(opts.rootRank, getSize(), "scatter");
    bool root = getRank() == opts.rootRank;
    at::Tensor packed;
    if (root) {
        TORCH_CHECK_VALUE(inputs.size() == 1 && inputs[0].size() == (size_t)getSize(),
                          "ccomm: scatter: scatter_list on the root must hold ", getSize(),
                          " tensors, it holds ", inputs.empty() ? 0 : inputs[0].size());
        for (size_t i = 0; i < inputs[0].size(); i++)
            checkSame(out, inputs[0][i], "scatter", "scatter_list", i, true);
        packed = pack(inputs[0]);
    } else {
        TORCH_CHECK_VALUE(inputs.empty() || inputs[0].empty(),
                          "ccomm: scatter: scatter_list must "
                          "be empty on rank ",
                          getRank(), ", which is not the root");
    }
    Flat f = flat(out, toCcDtype(out, "tensor", false));
    bool staged;
    at::Tensor dst = dense(out, &staged);
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(out, &o);
    auto w = newWork(OpType::SCATTER, outputs, tg.device);
    w->keep = {dst};
    if (root) w->keep.push_back(packed);
    if (staged) w->finish_fn = [out, dst]() mutable { out.copy_(dst); };
    coll_issued_++;
    return submit(w,
                  cc_scatter(tg.comm, root ? packed.data_ptr() : nullptr, dst.data_ptr(), f.count,
                             f.dt, (int)opts.rootRank, &o, slot(w, dst.nbytes() * getSize())),
                  "scatter");
}

WorkPtr ProcessGroupCcomm::reduce_scatter(std::vector<at::Tensor> &outputs,
                                          std::vector<std::vector<at::Tensor>> &inputs,
                                          const c10d::ReduceScatterOptions &opts)
{
    const at::Tensor &out = single(outputs, "reduce_scatter", "output");
    TORCH_CHECK_VALUE(inputs.size() == 1 && inputs[0].size() == (size_t)getSize(),
                      "ccomm: reduce_scatter: input_list must hold ", getSize(),
                      " tensors, it "
                      "holds ",
                      inputs.empty() ? 0 : inputs[0].size());
    for (size_t i = 0; i < inputs[0].size(); i++)
        checkSame(out, inputs[0][i], "reduce_scatter", "input_list", i, true);
    cc_dtype_t dt = toCcDtype(out, "output", true);
    cc_op_opts_t o = opOpts(opts.timeout);
    cc_redop_t op = toCcRedop(opts.reduceOp, out.scalar_type(), &o.premul_scalar);
    at::Tensor packed = pack(inputs[0]);
    bool staged;
    at::Tensor dst = dense(out, &staged);
    Target tg = target(out, &o);
    auto w = newWork(OpType::REDUCE_SCATTER, outputs, tg.device);
    w->keep = {packed, dst};
    if (staged) w->finish_fn = [out, dst]() mutable { out.copy_(dst); };
    coll_issued_++;
    return submit(w,
                  cc_reduce_scatter(tg.comm, packed.data_ptr(), dst.data_ptr(), dst.numel(), dt, op,
                                    &o, slot(w, packed.nbytes())),
                  "reduce_scatter");
}

WorkPtr ProcessGroupCcomm::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                const c10d::ReduceScatterOptions &opts)
{
    checkTensor(input, "input");
    checkTensor(output, "output");
    checkSameDevice(input, output, "reduce_scatter_tensor", "output");
    TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(),
                      "ccomm: reduce_scatter_tensor: "
                      "output has dtype ",
                      output.scalar_type(), ", input ", input.scalar_type());
    TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize(),
                      "ccomm: reduce_scatter_tensor: "
                      "input has ",
                      input.numel(), " elements, expected ", getSize(), " x ", output.numel());
    cc_dtype_t dt = toCcDtype(output, "output", true);
    cc_op_opts_t o = opOpts(opts.timeout);
    cc_redop_t op = toCcRedop(opts.reduceOp, output.scalar_type(), &o.premul_scalar);
    bool si, so;
    at::Tensor src = dense(input, &si), dst = dense(output, &so);
    Target tg = target(output, &o);
    auto w = newWork(OpType::_REDUCE_SCATTER_BASE, {output}, tg.device);
    w->keep = {src, dst};
    if (so) w->finish_fn = [output, dst]() mutable { output.copy_(dst); };
    coll_issued_++;
    return submit(w,
                  cc_reduce_scatter(tg.comm, src.data_ptr(), dst.data_ptr(), dst.numel(), dt, op, &o,
                                    slot(w, src.nbytes())),
                  "reduce_scatter_tensor");
}

/* Element counts per peer from PyTorch's split sizes (rows of dim 0); empty = equal. */
static std::vector<size_t> splitCounts(const at::Tensor &t, const std::vector<int64_t> &splits,
                                       int size, const char *arg)
{
    int64_t rows = t.dim() ? t.size(0) : 1, row = rows ? t.numel() / rows : 0;
    std::vector<size_t> c(size);
    if (splits.empty()) {
        TORCH_CHECK_VALUE(rows % size == 0, "ccomm: all_to_all_single: ", arg, " has ", rows,
                          " rows in dim 0, not divisible by the group size ", size);
        for (auto &x : c)
            x = (size_t)(rows / size * row);
        return c;
    }
    TORCH_CHECK_VALUE(splits.size() == (size_t)size, "ccomm: all_to_all_single: ", arg,
                      "_split_sizes has ", splits.size(), " entries, expected ", size);
    int64_t sum = 0;
    for (int p = 0; p < size; p++) {
        TORCH_CHECK_VALUE(splits[p] >= 0, "ccomm: all_to_all_single: ", arg, "_split_sizes[", p,
                          "] is ", splits[p]);
        sum += splits[p];
        c[p] = (size_t)(splits[p] * row);
    }
    TORCH_CHECK_VALUE(sum == rows, "ccomm: all_to_all_single: ", arg, "_split_sizes sum to ", sum,
                      ", but ", arg, " has ", rows, " rows");
    return c;
}

WorkPtr ProcessGroupCcomm::alltoall_base(at::Tensor &output, at::Tensor &input,
                                         std::vector<int64_t> &outputSplits,
                                         std::vector<int64_t> &inputSplits,
                                         const c10d::AllToAllOptions &opts)
{
    checkTensor(input, "input");
    checkTensor(output, "output");
    checkSameDevice(input, output, "all_to_all_single", "output");
    TORCH_CHECK_VALUE(output.scalar_type() == input.scalar_type(),
                      "ccomm: all_to_all_single: "
                      "output has dtype ",
                      output.scalar_type(), ", input ", input.scalar_type());
    auto sc = splitCounts(input, inputSplits, getSize(), "input");
    auto rc = splitCounts(output, outputSplits, getSize(), "output");
    cc_dtype_t dt = toCcDtype(input, "input", false);
    if (dt == CC_DTYPE_COUNT) { /* bytes */
        for (auto &x : sc)
            x *= input.element_size();
        for (auto &x : rc)
            x *= input.element_size();
        dt = CC_UINT8;
    }
    bool si, so;
    at::Tensor src = dense(input, &si), dst = dense(output, &so);
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(input, &o);
    auto w = newWork(OpType::ALLTOALL_BASE, {output}, tg.device);
    w->keep = {src, dst};
    if (so) w->finish_fn = [output, dst]() mutable { output.copy_(dst); };
    coll_issued_++;
    return submit(w,
                  cc_alltoallv(tg.comm, src.data_ptr(), dst.data_ptr(), sc.data(), nullptr, rc.data(),
                               nullptr, dt, &o, slot(w, std::max(src.nbytes(), dst.nbytes()))),
                  "all_to_all_single");
}

WorkPtr ProcessGroupCcomm::alltoall(std::vector<at::Tensor> &outputs,
                                    std::vector<at::Tensor> &inputs,
                                    const c10d::AllToAllOptions &opts)
{
    size_t n = (size_t)getSize();
    TORCH_CHECK_VALUE(inputs.size() == n && outputs.size() == n,
                      "ccomm: all_to_all: ", inputs.size(), " inputs and ", outputs.size(),
                      " outputs, expected ", n, " of each");
    std::vector<size_t> sc(n), rc(n);
    for (size_t p = 0; p < n; p++) {
        checkSame(inputs[0], inputs[p], "all_to_all", "input_tensor_list", p, false);
        checkSame(inputs[0], outputs[p], "all_to_all", "output_tensor_list", p, false);
        sc[p] = (size_t)inputs[p].numel() * inputs[p].element_size();
        rc[p] = (size_t)outputs[p].numel() * outputs[p].element_size();
    }
    at::Tensor packed = pack(inputs);
    int64_t total = 0;
    for (auto &t : outputs)
        total += t.numel();
    at::Tensor recv = at::empty({total}, outputs[0].options());
    cc_op_opts_t o = opOpts(opts.timeout);
    Target tg = target(inputs[0], &o);
    auto w = newWork(OpType::ALLTOALL, outputs, tg.device);
    w->keep = {packed, recv};
    w->finish_fn = unpackTo(outputs, recv);
    coll_issued_++;
    return submit(w,
                  cc_alltoallv(tg.comm, packed.data_ptr(), recv.data_ptr(), sc.data(), nullptr,
                               rc.data(), nullptr, CC_UINT8, &o, slot(w, packed.nbytes())),
                  "all_to_all");
}

WorkPtr ProcessGroupCcomm::barrier(const c10d::BarrierOptions &opts)
{
    auto w = newWork(OpType::BARRIER, {});
    cc_op_opts_t o = opOpts(opts.timeout);
    coll_issued_++;
    return submit(w, cc_barrier(comm_, &o, slot(w, 0)), "barrier");
}

void ProcessGroupCcomm::monitoredBarrier(const c10d::BarrierOptions &opts, bool waitAllRanks)
{
    (void)waitAllRanks; /* ccomm always reports every missing rank */
    int64_t ms = opts.timeout.count() > 0 ? opts.timeout.count() : 30 * 60 * 1000;
    std::vector<int> missing(getSize());
    int nmissing = 0;
    coll_issued_++;
    cc_status_t st;
    {
        st = cc_monitored_barrier(comm_, ms, missing.data(), (int)missing.size(), &nmissing,
                                  nullptr, nullptr);
    }
    if (st == CC_ERR_TIMEOUT && nmissing > 0) {
        std::string ranks;
        for (int i = 0; i < nmissing && i < getSize(); i++)
            ranks += (i ? ", " : "") + std::to_string(missing[i]);
        TORCH_CHECK(false, "ccomm: monitored_barrier on process group ", name_, ": rank",
                    nmissing > 1 ? "s " : " ", ranks, " failed to pass monitored_barrier in ", ms,
                    " ms");
    }
    TORCH_CHECK(st == CC_OK, errorText("monitored_barrier", st));
}

/* ---- point to point -------------------------------------------------------------------- */

static void checkPeer(int peer, int size, const char *fn, const char *arg)
{
    TORCH_CHECK_VALUE(peer >= 0 && peer < size, "ccomm: ", fn, ": ", arg, " ", peer,
                      " is out of range 0..", size - 1);
}

static void checkTag(int tag)
{
    TORCH_CHECK_VALUE(tag >= 0, "ccomm: tag ", tag, " is negative (ccomm tags are 0..", CC_TAG_MAX,
                      ")");
}

WorkPtr ProcessGroupCcomm::send(std::vector<at::Tensor> &tensors, int dstRank, int tag)
{
    const at::Tensor &t = single(tensors, "send", "tensor");
    checkPeer(dstRank, getSize(), "send", "dst");
    checkTag(tag);
    Flat f = flat(t, toCcDtype(t, "tensor", false));
    bool staged;
    at::Tensor buf = dense(t, &staged);
    cc_op_opts_t o = opOpts(std::chrono::milliseconds(0), tag);
    Target tg = target(t, &o);
    auto w = newWork(OpType::SEND, {}, tg.device);
    w->keep = {buf};
    return submit(w, cc_send(tg.comm, buf.data_ptr(), f.count, f.dt, dstRank, &o, &w->cw), "send");
}

WorkPtr ProcessGroupCcomm::recv(std::vector<at::Tensor> &tensors, int srcRank, int tag)
{
    const at::Tensor &t = single(tensors, "recv", "tensor");
    checkPeer(srcRank, getSize(), "recv", "src");
    checkTag(tag);
    Flat f = flat(t, toCcDtype(t, "tensor", false));
    bool staged;
    at::Tensor buf = dense(t, &staged);
    cc_op_opts_t o = opOpts(std::chrono::milliseconds(0), tag);
    Target tg = target(t, &o);
    auto w = newWork(OpType::RECV, tensors, tg.device);
    w->keep = {buf};
    w->src_rank = srcRank;
    if (staged) w->finish_fn = [t, buf]() mutable { t.copy_(buf); };
    return submit(w, cc_recv(tg.comm, buf.data_ptr(), f.count, f.dt, srcRank, &o, &w->cw), "recv");
}

WorkPtr ProcessGroupCcomm::recvAnysource(std::vector<at::Tensor> &tensors, int tag)
{
    (void)tensors;
    (void)tag;
    TORCH_CHECK(false, "ccomm: recv from any source is not supported (ccomm matches every receive "
                       "with one named peer): pass src to recv/irecv");
}

} // namespace ccomm_torch
