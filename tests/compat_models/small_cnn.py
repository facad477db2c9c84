"""A small convolutional classifier on synthetic 12x12 images of three kinds (horizontal
bars, vertical bars, a checkerboard) under noise: two conv blocks, global average pooling,
a linear classifier, SGD with momentum. A plain PyTorch script:

    python small_cnn.py --epochs 3                      # with PyTorch
    python -m tinygradx.compat small_cnn.py --epochs 3  # the same file on tinygradx
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = 12


def patterns():
    """(3, 1, SIZE, SIZE): the clean image of each class."""
    stripe = torch.tensor([1.0, 1.0, 0.0, 0.0]).repeat(SIZE // 4)     # 1 1 0 0 1 1 0 0 ...
    horizontal = stripe.view(SIZE, 1).expand(SIZE, SIZE)
    vertical = stripe.view(1, SIZE).expand(SIZE, SIZE)
    checker = (horizontal - vertical).abs()
    return torch.stack([horizontal, vertical, checker]).unsqueeze(1)


def make_dataset(n, noise=0.5):
    labels = torch.randint(0, 3, (n,))
    images = patterns()[labels] + noise * torch.randn(n, 1, SIZE, SIZE)
    return images, labels


class SmallCNN(nn.Module):
    def __init__(self, n_classes=3, width=8):
        super().__init__()
        self.conv1 = nn.Conv2d(1, width, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, kernel_size=3, padding="same")
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, n_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))      # (B, w, 6, 6)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2, stride=1)   # (B, 2w, 5, 5)
        x = torch.flatten(self.gap(x), 1)         # (B, 2w)
        return self.fc(x)


def train_epoch(model, optimizer, images, labels, batch_size):
    model.train()
    total = 0.0
    for i in range(0, images.size(0), batch_size):
        x, y = images[i:i + batch_size], labels[i:i + batch_size]
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * x.size(0)
    return total / images.size(0)


@torch.no_grad()
def accuracy(model, images, labels):
    model.eval()
    pred = model(images).argmax(dim=1)
    return (pred == labels).float().mean().item()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--n", type=int, default=192)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    train_x, train_y = make_dataset(args.n)
    test_x, test_y = make_dataset(96)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        loss = train_epoch(model, optimizer, train_x, train_y, args.batch)
        print(f"epoch {epoch}  loss {loss:.3f}  test accuracy "
              f"{accuracy(model, test_x, test_y):.2f}")


if __name__ == "__main__":
    main()
