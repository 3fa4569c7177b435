"""A small convolutional network (five kernels: conv, pointwise conv,
pool + flatten, dense, softmax), shared by the stack-usage and
memory-report tests."""

CNN = """
def @main(%x: Tensor[(1, 2, 6, 6), float32], %w: Tensor[(4, 2, 3, 3), float32],
          %v: Tensor[(4, 4, 1, 1), float32], %f: Tensor[(3, 36), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]));
  %1 = nn.relu(nn.conv2d(%0, %v, channels=4, kernel_size=[1, 1]));
  %2 = nn.batch_flatten(nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]));
  nn.softmax(nn.dense(%2, %f, units=3))
}
"""
