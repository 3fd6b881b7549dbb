"""attorch (BobMcDear/attorch): a subset of PyTorch's nn module in Triton."""
import torch

from third_party import Case, Source

REPO, COMMIT, LICENCE = "BobMcDear/attorch", "67c2772baf33913ef51c2d1064f746ca17b63749", "MIT"

SOURCES = [
    Source("attorch/cross_entropy_loss", REPO, COMMIT, "attorch/cross_entropy_loss_kernels.py", LICENCE,
           ("cross_entropy_loss_forward_kernel cross_entropy_loss_backward_kernel",)),
    Source("attorch/layer_norm", REPO, COMMIT, "attorch/layer_norm_kernels.py", LICENCE,
           ("layer_norm_forward_kernel",)),
    Source("attorch/softmax", REPO, COMMIT, "attorch/softmax_kernels.py", LICENCE,
           ("softmax_forward_kernel",)),
    Source("attorch/conv", REPO, COMMIT, "attorch/conv_kernels.py", LICENCE,
           ("conv2d_forward_kernel",)),
    Source("attorch/dropout", REPO, COMMIT, "attorch/dropout_kernels.py", LICENCE,
           ("apply_dropout dropout_forward_kernel",)),
    Source("attorch/linear", REPO, COMMIT, "attorch/linear_kernels.py", LICENCE,
           ("attorch/act_kernels.py:gelu apply_act_func", "linear_forward_kernel")),
    Source("attorch/batch_norm", REPO, COMMIT, "attorch/batch_norm_kernels.py", LICENCE,
           ("attorch/act_kernels.py:relu apply_act_func", "batch_norm_forward_kernel")),
]

# Each kernel was autotuned (and its block sizes set by heuristics); the launches below pass one
# config: the heuristics' block sizes and one of the autotuner's configs, named in each comment.


def _cross_entropy_inputs(device):
    torch.manual_seed(0)
    batch, classes = 4096, 1000  # an ImageNet-1k classifier's logits, class-weighted
    logits = torch.randn(batch, classes, device=device, dtype=torch.float16)
    target = torch.randint(0, classes, (batch,), device=device)
    weight = (0.5 + torch.rand(classes)).to(device)
    return batch, classes, logits, target, weight


def _cross_entropy_loss_forward(module, device):
    # BLOCK_SIZE_BATCH_heuristic: 1 row a program (1000 features >= 64); BLOCK_SIZE_FEAT = 1024; 4 warps.
    batch, classes, logits, target, weight = _cross_entropy_inputs(device)
    output = torch.empty(batch, device=device, dtype=torch.float32)
    sum_weights = torch.empty_like(output)

    def launch():
        module.cross_entropy_loss_forward_kernel[(batch,)](
            logits, target, weight, sum_weights, output, batch, classes, *logits.stride(), weighted=True,
            BLOCK_SIZE_BATCH=1, BLOCK_SIZE_FEAT=1024, num_warps=4)
        return output, sum_weights
    return launch


def _cross_entropy_loss_backward(module, device):
    # As the forward: 1 row a program, BLOCK_SIZE_FEAT = 1024, 4 warps; sum_weights as the layer saves it.
    batch, classes, logits, target, weight = _cross_entropy_inputs(device)
    sum_weights = weight[target].sum().reshape(())
    output_grad = torch.ones((), device=device)
    input_grad = torch.empty_like(logits)

    def launch():
        module.cross_entropy_loss_backward_kernel[(batch,)](
            output_grad, target, logits, weight, sum_weights, input_grad, batch, classes, *logits.stride(),
            *input_grad.stride(), weighted=True, BLOCK_SIZE_BATCH=1, BLOCK_SIZE_FEAT=1024, num_warps=4)
        return (input_grad,)
    return launch


def _layer_norm_forward(module, device):
    # GPT-2 small / ViT-B width (768), training (stats saved), weight and bias: 1 row a program,
    # BLOCK_SIZE_FEAT = 1024, 4 warps.
    torch.manual_seed(0)
    rows, cols = 4 * 1024, 768
    x = torch.randn(rows, cols, device=device, dtype=torch.float16)
    w = (1 + 0.1 * torch.randn(cols)).to(device=device, dtype=torch.float16)
    b = (0.1 * torch.randn(cols)).to(device=device, dtype=torch.float16)
    mean = torch.empty(rows, device=device)
    inv_std = torch.empty(rows, device=device)
    y = torch.empty_like(x)

    def launch():
        module.layer_norm_forward_kernel[(rows,)](
            x, w, b, mean, inv_std, y, rows, cols, *x.stride(), *y.stride(), 1e-5, scale_by_weight=True,
            add_bias=True, save_stats=True, BLOCK_SIZE_BATCH=1, BLOCK_SIZE_FEAT=1024, num_warps=4)
        return y, mean, inv_std
    return launch


def _softmax_forward(module, device):
    # A mixture-of-experts router's softmax over 60 experts for 32768 tokens: under 64 features the
    # heuristic packs rows, BLOCK_SIZE_BATCH = min(max(1, next_power_of_2(32768 // 1024)), 128) = 32;
    # BLOCK_SIZE_FEAT = 64; 4 warps.
    torch.manual_seed(0)
    tokens, experts = 32 * 1024, 60
    x = torch.randn(tokens, experts, device=device)
    y = torch.empty_like(x)

    def launch():
        module.softmax_forward_kernel[(tokens // 32,)](
            x, y, tokens, experts, *x.stride(), *y.stride(), neg=False, log=False, BLOCK_SIZE_BATCH=32,
            BLOCK_SIZE_FEAT=64, num_warps=4)
        return (y,)
    return launch


def _conv2d_forward(module, device):
    # A ResNet-50 layer1 3x3 convolution (64 -> 64 channels, 56 x 56, padding 1) in fp16: the
    # autotuner's conv2d_forward_config(128, 32, 64, n_warps=4, n_stages=4); tf32 as allow_tf32() on an H200.
    torch.manual_seed(0)
    n, c, h, w, k = 16, 64, 56, 56, 64
    x = torch.randn(n, c, h, w, device=device, dtype=torch.float16)
    weight = (0.05 * torch.randn(k, c, 3, 3)).to(device=device, dtype=torch.float16)
    y = torch.empty(n, k, h, w, device=device, dtype=torch.float16)
    grid = (-(-n * h * w // 128), -(-k // 64), 1)

    def launch():
        module.conv2d_forward_kernel[grid](
            x, weight, y, n, c, h, w, k, h, w, *x.stride(), *weight.stride(), *y.stride(), 3, 3, 1, 1, 1, 1,
            groups=1, fp16=True, tf32=True, BLOCK_SIZE_BATCH_HEIGHT_WIDTH=128, BLOCK_SIZE_IN_FEAT=32,
            BLOCK_SIZE_OUT_FEAT=64, num_warps=4, num_stages=4)
        return (y,)
    return launch


def _dropout_forward(module, device):
    # Dropout (p = 0.1) on ViT-B/16 activations at 384 px (577 tokens x 768, batch 6), fp16: the
    # autotuner's largest element-wise config, BLOCK_SIZE 1024 with 4 warps.
    torch.manual_seed(0)
    x = torch.randn(6, 577, 768, device=device, dtype=torch.float16)
    y = torch.empty_like(x)
    size = x.numel()

    def launch():
        module.dropout_forward_kernel[(-(-size // 1024),)](x, y, size, 0.1, 1234, BLOCK_SIZE=1024, num_warps=4)
        return (y,)
    return launch


def _linear_forward(module, device):
    # GPT-2 small's MLP up-projection (768 -> 3072) with bias and fused GELU, training (pre-activation
    # saved), fp16, 4 x 1000 tokens: the autotuner's linear_forward_config(128, 64, 256, n_warps=8,
    # n_stages=3), GROUP_SIZE_BATCH 8.
    torch.manual_seed(0)
    tokens, d_in, d_out = 4 * 1000, 768, 3072
    x = torch.randn(tokens, d_in, device=device, dtype=torch.float16)
    weight = (0.03 * torch.randn(d_in, d_out)).to(device=device, dtype=torch.float16)
    bias = (0.1 * torch.randn(d_out)).to(device=device, dtype=torch.float16)
    pre_act = torch.empty(tokens, d_out, device=device, dtype=torch.float16)
    y = torch.empty_like(pre_act)
    grid = (-(-tokens // 128) * -(-d_out // 256),)

    def launch():
        module.linear_forward_kernel[grid](
            x, weight, bias, pre_act, y, tokens, d_in, d_out, *x.stride(), *weight.stride(), *pre_act.stride(),
            *y.stride(), None, add_bias=True, act_func="gelu", save_pre_act=True, fp16=True, tf32=True,
            BLOCK_SIZE_BATCH=128, BLOCK_SIZE_IN_FEAT=64, BLOCK_SIZE_OUT_FEAT=256, GROUP_SIZE_BATCH=8,
            num_warps=8, num_stages=3)
        return pre_act, y
    return launch


def _batch_norm_forward(module, device):
    # A ResNet-50 bottleneck's last BatchNorm2d in training (256 channels, 56 x 56, batch 16, fp16),
    # with the residual added and ReLU fused, as BatchNorm2d(act_func='relu') runs it: the layer
    # views the input as [H*W, C, N], so BLOCK_SIZE_BATCH = next_power_of_2(3136) = 4096 and
    # BLOCK_SIZE_SPATIAL = min(next_power_of_2(16), 2**14 // 4096) = 4; of the autotuner's warps, 8.
    torch.manual_seed(0)
    n, c, h, w = 16, 256, 56, 56
    x = torch.randn(n, c, h, w, device=device, dtype=torch.float16)
    residual = torch.randn(n, c, h, w, device=device, dtype=torch.float16)
    x3, r3 = (t.view(n, c, h * w).transpose(0, -1) for t in (x, residual))
    weight = (1 + 0.1 * torch.randn(c)).to(device)
    bias = (0.1 * torch.randn(c)).to(device)
    mean, inv_std = torch.empty(c, device=device), torch.empty(c, device=device)
    kept = (torch.zeros(c, device=device), torch.ones(c, device=device))
    running_mean, running_var = (t.clone() for t in kept)
    output, pre_act = torch.empty_like(x3), torch.empty_like(x3)
    batch_dim, _, spatial_dim = x3.shape

    def launch():
        running_mean.copy_(kept[0])
        running_var.copy_(kept[1])
        module.batch_norm_forward_kernel[(c,)](
            x3, weight, bias, mean, inv_std, r3, pre_act, output, running_mean, running_var, batch_dim,
            spatial_dim, *x3.stride(), *r3.stride(), *pre_act.stride(), *output.stride(), 0.1, 1e-5, None,
            affine=True, save_stats=True, track_running_stats=True, is_train=True, add_pre_act=True,
            act_func="relu", save_pre_act=True, BLOCK_SIZE_BATCH=4096, BLOCK_SIZE_SPATIAL=4, num_warps=8)
        return output, pre_act, mean, inv_std, running_mean, running_var
    return launch


CASES = [
    Case("attorch/cross_entropy_loss_forward", "attorch/cross_entropy_loss", r"cross_entropy_loss_forward_kernel",
         {1: "program", 2: "load", 3: "logsumexp", 4: "weight", 5: "store"}, _cross_entropy_loss_forward),
    Case("attorch/cross_entropy_loss_backward", "attorch/cross_entropy_loss", r"cross_entropy_loss_backward_kernel",
         {1: "program", 2: "load", 3: "softmax", 4: "load_target", 5: "weight", 6: "store"},
         _cross_entropy_loss_backward),
    Case("attorch/layer_norm_forward", "attorch/layer_norm", r"layer_norm_forward_kernel",
         {1: "program", 2: "load", 3: "stats", 4: "store_stats", 5: "affine", 6: "store"}, _layer_norm_forward),
    Case("attorch/softmax_forward", "attorch/softmax", r"softmax_forward_kernel",
         {1: "program", 2: "load", 3: "reduce", 4: "store"}, _softmax_forward),
    Case("attorch/conv2d_forward", "attorch/conv", r"conv2d_forward_kernel",
         {1: "program", 2: "kh", 3: "kw", 4: "in_feat", 5: "load", 6: "dot", 7: "store"}, _conv2d_forward),
    Case("attorch/dropout_forward", "attorch/dropout", r"dropout_forward_kernel",
         {1: "program", 2: "load", 3: "dropout", 4: "store"}, _dropout_forward),
    Case("attorch/linear_forward", "attorch/linear", r"linear_forward_kernel",
         {1: "program", 2: "k_loop", 3: "load", 4: "dot", 5: "bias", 6: "act", 7: "store"}, _linear_forward),
    Case("attorch/batch_norm_forward", "attorch/batch_norm", r"batch_norm_forward_kernel",
         {1: "program", 2: "stats", 3: "stats_loop", 4: "load", 5: "welford", 6: "running", 7: "norm_loop",
          8: "load_norm", 9: "store"}, _batch_norm_forward),
]
