#ifndef KERNEL_LAUNCH_H
#define KERNEL_LAUNCH_H

void launch(int gridSizeX, int blockSizeX, int gridSizeY = 1, int blockSizeY = 1, 
            int gridSizeZ = 1, int blockSizeZ = 1);

#endif