"""File names of torchvision's ImageNet checkpoints, per weights enum and member (the last
member listed is the enum's DEFAULT). ember downloads none of them: a builder given weights
loads ``<hub dir>/checkpoints/<file>`` when it is there (``ember.hub.get_dir``, the cache
PyTorch fills) and raises otherwise."""

BASE_URL = "https://download.pytorch.org/models/"

# enum name -> ((member, file name), ...), oldest first; DEFAULT is the last
CHECKPOINTS = {
    "AlexNet_Weights": (("IMAGENET1K_V1", "alexnet-owt-7be5be79.pth"),),
    "DenseNet121_Weights": (("IMAGENET1K_V1", "densenet121-a639ec97.pth"),),
    "DenseNet161_Weights": (("IMAGENET1K_V1", "densenet161-8d451a50.pth"),),
    "DenseNet169_Weights": (("IMAGENET1K_V1", "densenet169-b2777c0a.pth"),),
    "DenseNet201_Weights": (("IMAGENET1K_V1", "densenet201-c1103571.pth"),),
    "MobileNet_V2_Weights": (("IMAGENET1K_V1", "mobilenet_v2-b0353104.pth"),
                             ("IMAGENET1K_V2", "mobilenet_v2-7ebf99e0.pth")),
    "MobileNet_V3_Large_Weights": (("IMAGENET1K_V1", "mobilenet_v3_large-8738ca79.pth"),
                                   ("IMAGENET1K_V2", "mobilenet_v3_large-5c1a4163.pth")),
    "MobileNet_V3_Small_Weights": (("IMAGENET1K_V1", "mobilenet_v3_small-047dcff4.pth"),),
    "ResNeXt101_32X8D_Weights": (("IMAGENET1K_V1", "resnext101_32x8d-8ba56ff5.pth"),
                                 ("IMAGENET1K_V2", "resnext101_32x8d-110c445d.pth")),
    "ResNeXt101_64X4D_Weights": (("IMAGENET1K_V1", "resnext101_64x4d-173b62eb.pth"),),
    "ResNeXt50_32X4D_Weights": (("IMAGENET1K_V1", "resnext50_32x4d-7cdf4587.pth"),
                                ("IMAGENET1K_V2", "resnext50_32x4d-1a0047aa.pth")),
    "ResNet18_Weights": (("IMAGENET1K_V1", "resnet18-f37072fd.pth"),),
    "ResNet34_Weights": (("IMAGENET1K_V1", "resnet34-b627a593.pth"),),
    "ResNet50_Weights": (("IMAGENET1K_V1", "resnet50-0676ba61.pth"),
                         ("IMAGENET1K_V2", "resnet50-11ad3fa6.pth")),
    "ResNet101_Weights": (("IMAGENET1K_V1", "resnet101-63fe2227.pth"),
                          ("IMAGENET1K_V2", "resnet101-cd907fc2.pth")),
    "ResNet152_Weights": (("IMAGENET1K_V1", "resnet152-394f9c45.pth"),
                          ("IMAGENET1K_V2", "resnet152-f82ba261.pth")),
    "SqueezeNet1_0_Weights": (("IMAGENET1K_V1", "squeezenet1_0-b66bff10.pth"),),
    "SqueezeNet1_1_Weights": (("IMAGENET1K_V1", "squeezenet1_1-b8a52dc0.pth"),),
    "VGG11_Weights": (("IMAGENET1K_V1", "vgg11-8a719046.pth"),),
    "VGG11_BN_Weights": (("IMAGENET1K_V1", "vgg11_bn-6002323d.pth"),),
    "VGG13_Weights": (("IMAGENET1K_V1", "vgg13-19584684.pth"),),
    "VGG13_BN_Weights": (("IMAGENET1K_V1", "vgg13_bn-abd245e5.pth"),),
    "VGG16_Weights": (("IMAGENET1K_FEATURES", "vgg16_features-amdegroot-88682ab5.pth"),
                      ("IMAGENET1K_V1", "vgg16-397923af.pth")),
    "VGG16_BN_Weights": (("IMAGENET1K_V1", "vgg16_bn-6c64b313.pth"),),
    "VGG19_Weights": (("IMAGENET1K_V1", "vgg19-dcbb9e9d.pth"),),
    "VGG19_BN_Weights": (("IMAGENET1K_V1", "vgg19_bn-c79401a0.pth"),),
    "Wide_ResNet50_2_Weights": (("IMAGENET1K_V1", "wide_resnet50_2-95faca4d.pth"),
                                ("IMAGENET1K_V2", "wide_resnet50_2-9ba9bcbe.pth")),
    "Wide_ResNet101_2_Weights": (("IMAGENET1K_V1", "wide_resnet101_2-32ee1156.pth"),
                                 ("IMAGENET1K_V2", "wide_resnet101_2-d733dc28.pth")),
}

# members whose checkpoint is a feature extractor without ImageNet's 1000-class head
NO_CLASSES = {("VGG16_Weights", "IMAGENET1K_FEATURES")}
