"""A small convolutional classifier with batch normalisation, in the style of the CIFAR/MNIST
tutorials: conv -> BatchNorm2d -> ReLU -> max-pool blocks, a BatchNorm1d head with dropout,
SGD with momentum and a step schedule, model.train() / model.eval() around an accuracy check.

The task is made up so the file runs anywhere: 12x12 one-channel images holding a bright bar,
horizontal (class 0), vertical (class 1) or diagonal (class 2), on noise.

    python bn_cnn.py --epochs 3
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 3
SIZE = 12


def make_bars(n, generator=None):
    """n noisy images (n, 1, 12, 12) with one bar each, and their classes (n,)."""
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=generator)
    images = 0.3 * torch.randn(n, 1, SIZE, SIZE, generator=generator)
    offsets = torch.randint(2, SIZE - 2, (n,), generator=generator)
    for i in range(n):
        k, c = int(labels[i]), int(offsets[i])
        if k == 0:
            images[i, 0, c, 2:-2] += 1.0
        elif k == 1:
            images[i, 0, 2:-2, c] += 1.0
        else:
            idx = torch.arange(SIZE)
            images[i, 0, idx, idx] += 1.0
    return images, labels


class ConvBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)


class BarNet(nn.Module):
    def __init__(self, channels=8, hidden=32, dropout=0.25):
        super().__init__()
        self.features = nn.Sequential(ConvBlock(1, channels), ConvBlock(channels, 2 * channels))
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(2 * channels * (SIZE // 4) ** 2, hidden)
        self.bn1 = nn.BatchNorm1d(hidden, momentum=0.2)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, NUM_CLASSES)

    def forward(self, x):
        x = self.flatten(self.features(x))          # (N, 2C, 3, 3) -> (N, 18C)
        x = self.dropout(F.relu(self.bn1(self.fc1(x))))
        return self.fc2(x)


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    total = 0.0
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        total += loss.item() * images.size(0)
    return total / len(loader.dataset)


@torch.no_grad()
def accuracy(model, images, labels):
    model.eval()
    pred = model(images).argmax(dim=1)
    return (pred == labels).float().mean().item()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x_train, y_train = make_bars(256, g)
    x_test, y_test = make_bars(96, g)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=32, shuffle=True,
                        generator=g)
    model = BarNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        loss = train_epoch(model, loader, optimizer, criterion)
        scheduler.step()
        print(f"epoch {epoch}: loss {loss:.4f}, test accuracy "
              f"{accuracy(model, x_test, y_test):.3f}")


if __name__ == "__main__":
    main()
