"""A variational autoencoder in the style of the classic MNIST VAE example: an MLP encoder to
(mu, logvar), the reparameterisation trick with torch.randn_like, a sigmoid decoder, and the loss
written as older code writes it, `F.binary_cross_entropy(..., size_average=False)` (the sum, in
the legacy spelling PyTorch still maps) plus the Gaussian KL term.

The data is made up so the file runs anywhere: 8x8 binary "strokes" (rows, columns, blocks).

    python vae.py --epochs 5
"""
import argparse

import torch
from torch import nn, optim
from torch.nn import functional as F

PIXELS = 64


def make_strokes(n, generator=None):
    """n flattened 8x8 images in [0, 1]: a lit row, column or 2x2 block on a faint background."""
    images = torch.full((n, 8, 8), 0.05)
    kind = torch.randint(0, 3, (n,), generator=generator)
    where = torch.randint(0, 7, (n, 2), generator=generator)
    for i in range(n):
        r, c = int(where[i, 0]), int(where[i, 1])
        if kind[i] == 0:
            images[i, r, :] = 0.95
        elif kind[i] == 1:
            images[i, :, c] = 0.95
        else:
            images[i, r:r + 2, c:c + 2] = 0.95
    return images.view(n, PIXELS)


class VAE(nn.Module):
    def __init__(self, hidden=48, latent=4):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(PIXELS, hidden)
        self.fc_mu = nn.Linear(hidden, latent)
        self.fc_logvar = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, PIXELS)

    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc_mu(h), self.fc_logvar(h)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, PIXELS))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    # reconstruction summed over the batch and the pixels (the legacy size_average=False)
    bce = F.binary_cross_entropy(recon_x, x.view(-1, PIXELS), size_average=False)
    # KL(N(mu, sigma) || N(0, 1)), summed
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    data = make_strokes(256, torch.Generator().manual_seed(1))
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for start in range(0, len(data), args.batch_size):
            batch = data[start:start + args.batch_size]
            optimizer.zero_grad()
            recon, mu, logvar = model(batch)
            loss = loss_function(recon, batch, mu, logvar)
            loss.backward()
            total += loss.item()
            optimizer.step()
        print(f"epoch {epoch}: loss per image {total / len(data):.3f}")
    model.eval()
    with torch.no_grad():
        sample = model.decode(torch.randn(4, 4))
    print("samples", tuple(sample.shape))


if __name__ == "__main__":
    main()
