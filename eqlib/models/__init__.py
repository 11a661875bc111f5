"""Models as sequences of parametric layers (the formalism of the course).

Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
"""
from .attention import AttentionNetwork, MultiHeadAttention
from .base import EquivariantLayer, Layer, Model
from .cnn import (VGG, VGG_CONFIGS, ConvLayer, MirrorGCNN, PoolHead, channel_involution, conv_layers, flip_filters,
                  mirror_invariance_error, warm_batchnorm)
from .equivariant import EquivariantDense, EquivariantMLP, GroupAverage, IntertwinerProjection
from .sets import DeepSetsLayer, GraphLayer, ResidualBlock
from .mlp import ACTIVATIONS, ODD_ACTIVATIONS, MLP, Dense

__all__ = ["Layer", "EquivariantLayer", "Model", "Dense", "MLP", "ACTIVATIONS", "ODD_ACTIVATIONS",
           "MultiHeadAttention", "AttentionNetwork", "VGG", "VGG_CONFIGS", "MirrorGCNN", "ConvLayer", "PoolHead",
           "channel_involution", "conv_layers", "flip_filters", "mirror_invariance_error", "warm_batchnorm",
           "DeepSetsLayer", "GraphLayer", "ResidualBlock",
           "EquivariantDense", "EquivariantMLP", "GroupAverage", "IntertwinerProjection"]
